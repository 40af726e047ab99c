package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// docsServer serves the console over a real pipeline and returns a token
// named "ann", a request function and a wait for the background drives.
func docsServer(t *testing.T, b sqltest.Backend) (*pipeline.Pipeline, string, func(method, path, token, form, body string) (int, http.Header, string), func()) {
	t.Helper()
	ctx := context.Background()
	cfg := pipeline.Defaults()
	cfg.Home, cfg.Database = t.TempDir(), b.NewURL(t)
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	secret, _, err := p.DB().Auth().CreateToken(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var drives []<-chan struct{}
	s := &Server{Ingest: p.DB().Ingest(), Auth: p.DB().Auth(), Docs: p, driven: func(done <-chan struct{}) {
		mu.Lock()
		drives = append(drives, done)
		mu.Unlock()
	}}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, token, form, body string) (int, http.Header, string) {
		t.Helper()
		var rd io.Reader
		if form != "" {
			rd = strings.NewReader(form)
		} else if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, srv.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if form != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(out)
	}
	wait := func() {
		mu.Lock()
		ds := drives
		drives = nil
		mu.Unlock()
		for _, d := range ds {
			<-d
		}
	}
	t.Cleanup(wait)
	return p, secret, do, wait
}

// The API reads, writes (based on a version: stale is 409) and deletes
// documents, each write audited as the token's name.
func TestAPIDocuments(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p, tok, do, _ := docsServer(t, b)
		if _, err := p.CreateCollection(ctx, "ann", "things", []string{"n:text"}); err != nil {
			t.Fatal(err)
		}
		id := "01J0000000000000000000000A"
		if code, _, body := do("PUT", "/api/docs/things/"+id, "", "", `{"base_version":0,"set":{"n":"1"}}`); code != 401 {
			t.Fatalf("unsigned write: %d %s", code, body)
		}
		if code, _, body := do("PUT", "/api/docs/things/"+id, tok, "", `{"set":{"n":"1"}}`); code != 400 {
			t.Fatalf("write without a base version: %d %s", code, body)
		}
		if code, _, body := do("PUT", "/api/docs/things/"+id, tok, "", `{"base_version":0,"set":{"n":"1"}}`); code != 200 {
			t.Fatalf("create: %d %s", code, body)
		}
		if code, _, body := do("PUT", "/api/docs/things/"+id, tok, "", `{"base_version":1,"set":{"n":"2"}}`); code != 200 {
			t.Fatalf("update: %d %s", code, body)
		}
		code, _, body := do("PUT", "/api/docs/things/"+id, tok, "", `{"base_version":1,"set":{"n":"3"}}`)
		if code != 409 || !strings.Contains(body, `"error"`) {
			t.Fatalf("stale write: %d %s", code, body)
		}
		code, _, body = do("GET", "/api/docs/things/"+id, tok, "", "")
		var d content.Document
		if code != 200 || json.Unmarshal([]byte(body), &d) != nil || d.Version != 2 || string(d.Fields["n"]) != `"2"` {
			t.Fatalf("get: %d %s", code, body)
		}
		if code, _, body := do("GET", "/console/docs/things/"+id, tok, "", ""); code != 200 || !strings.Contains(body, "<code>&#34;2&#34;</code>") {
			t.Fatalf("the document's page: %d %s", code, body)
		}
		if code, _, body := do("DELETE", "/api/docs/things/"+id, tok, "", ""); code != 409 {
			t.Fatalf("delete of a document with history, unforced: %d %s", code, body)
		}
		// ?force= is true or false, as on every other route: a value that
		// is neither is refused, not read as false.
		if code, _, body := do("DELETE", "/api/docs/things/"+id+"?force=yes", tok, "", ""); code != 400 || !strings.Contains(body, "force") {
			t.Fatalf("delete with ?force=yes: %d %s, want 400 naming force", code, body)
		}
		if code, _, body := do("DELETE", "/api/docs/things/"+id+"?force=true", tok, "", ""); code != 200 || !strings.Contains(body, `"actor": "ann"`) {
			t.Fatalf("forced delete: %d %s", code, body)
		}
		if code, _, _ := do("GET", "/api/docs/things/"+id, tok, "", ""); code != 404 {
			t.Fatalf("get after delete: %d", code)
		}
		acts, err := p.DocumentActions(ctx, content.ActionFilter{DocumentID: id})
		if err != nil || len(acts) != 3 || acts[0].Action != content.ActionDelete || acts[2].Actor != "ann" {
			t.Fatalf("audit: %+v %v", acts, err)
		}
	})
}

// A migration started from the console runs in the background, its page
// refreshes itself while it is active, and a failed run is aborted from
// its page; the API does the same over JSON.
func TestConsoleMigrations(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p, tok, do, wait := docsServer(t, b)
		if _, err := p.CreateCollection(ctx, "ann", "things", []string{"n:text"}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ImportDocuments(ctx, "ann", "things", "seed", strings.NewReader("{\"n\":\"1\"}\n{\"n\":\"x\"}\n")); err != nil {
			t.Fatal(err)
		}
		if code, _, body := do("GET", "/console/migrations", tok, "", ""); code != 200 || !strings.Contains(body, `value="things.n"`) {
			t.Fatalf("migrations page: %d %s", code, body)
		}
		code, h, body := do("POST", "/console/migrations", tok, "field=things.n&to=number&batch=1", "")
		if code != 303 || !strings.HasPrefix(h.Get("Location"), "/console/migrations/") {
			t.Fatalf("start: %d %v %s", code, h, body)
		}
		wait()
		loc, _ := url.Parse(h.Get("Location"))
		id := strings.TrimPrefix(loc.Path, "/console/migrations/")
		code, _, body = do("GET", loc.String(), tok, "", "")
		if code != 200 || !strings.Contains(body, "failed") || strings.Contains(body, `http-equiv="refresh"`) || !strings.Contains(noticeSet(h, tok), "started things.n") {
			t.Fatalf("the failed run's page: %d %s", code, body)
		}
		if code, h, body := do("POST", "/console/migrations/"+id+"/abort", tok, "x=1", ""); code != 303 || !strings.HasPrefix(noticeSet(h, tok), "aborting") {
			t.Fatalf("abort: %d %v %s", code, h, body)
		}
		wait()
		if r, err := p.MigrationRun(ctx, id); err != nil || r.Status != content.RunAborted {
			t.Fatalf("after abort: %+v %v", r, err)
		}
		if code, _, body := do("POST", "/console/migrations/"+id+"/resume", tok, "x=1", ""); code != 409 || !strings.Contains(body, "aborted") {
			t.Fatalf("resume of an aborted run: %d %s", code, body)
		}
		// A run nobody drives yet is active: its page refreshes itself.
		run, err := p.StartMigration(ctx, "ann", "things", "n", "richtext", 1)
		if err != nil {
			t.Fatal(err)
		}
		if code, _, body := do("GET", "/console/migrations/"+run.ID, tok, "", ""); code != 200 || !strings.Contains(body, `http-equiv="refresh"`) {
			t.Fatalf("an active run's page: %d %s", code, body)
		}
		if code, _, body := do("POST", "/api/migrations/"+run.ID+"/resume", tok, "", ""); code != 202 {
			t.Fatalf("API resume: %d %s", code, body)
		}
		wait()
		if r, err := p.MigrationRun(ctx, run.ID); err != nil || r.Status != content.RunDone {
			t.Fatalf("after the API's resume: %+v %v", r, err)
		}
		if code, _, body := do("POST", "/api/migrations", tok, "", `{"collection":"things","field":"n","to":"money"}`); code != 400 {
			t.Fatalf("API start of a bad type: %d %s", code, body)
		}
		acts, err := p.DocumentActions(ctx, content.ActionFilter{RunID: id})
		if err != nil || len(acts) != 2 || acts[0].Action != content.ActionMigrationAbort || acts[0].Actor != "ann" {
			t.Fatalf("the run's audit: %+v %v", acts, err)
		}
	})
}

// mustEventID settles one item of a new source and returns its event's ID.
func mustEventID(t *testing.T, p *pipeline.Pipeline) string {
	t.Helper()
	ctx := context.Background()
	st := p.DB().Ingest()
	src, err := st.AddSource(ctx, ingest.NewSource{Name: "src", Kind: "git", Location: "/src", Interval: time.Hour, RetryBudget: 3})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Claim(ctx, src.ID, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := st.Settle(ctx, c, ingest.Settlement{Cursor: "1", NextDueAt: time.Now(),
		Items: []tidemark.Item{{Key: "k1", Title: "a change", OccurredAt: time.Now(), Evidence: []byte("x")}}})
	if err != nil || len(rep.EventIDs) != 1 {
		t.Fatalf("settle: %+v %v", rep, err)
	}
	return rep.EventIDs[0]
}

// A page document is edited from the console: the form's title and notes
// become the document's fields, and an edit based on an old version is
// refused with the conflict shown.
func TestConsoleEditsPageDocument(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p, tok, do, _ := docsServer(t, b)
		id := mustEventID(t, p) // a page document is keyed by its event
		if code, h, _ := do("GET", "/console/docs/pages?edit="+id, tok, "", ""); code != 303 || h.Get("Location") != "/console/docs/pages/"+id {
			t.Fatalf("edit the page of an event: %d %v", code, h)
		}
		if code, _, body := do("GET", "/console/docs/pages/"+id, tok, "", ""); code != 200 || !strings.Contains(body, "saving creates it") {
			t.Fatalf("edit page of a new document: %d %s", code, body)
		}
		code, h, body := do("POST", "/console/docs/pages/"+id, tok, "base_version=0&title=Better+title&notes=First.%0D%0A%0D%0ASecond.", "")
		if code != 303 || noticeSet(h, tok) != "saved version 1" {
			t.Fatalf("save: %d %v %s", code, h, body)
		}
		d, err := p.Document(ctx, content.PagesCollection, id)
		o := content.OverridesOf(d)
		if err != nil || o.Title != "Better title" || len(o.Notes) != 2 {
			t.Fatalf("saved: %+v %v", o, err)
		}
		if code, _, body := do("GET", "/console/docs/pages/"+id, tok, "", ""); code != 200 || !strings.Contains(body, `value="Better title"`) || !strings.Contains(body, "ann") {
			t.Fatalf("edit page: %d %s", code, body)
		}
		if code, _, body := do("POST", "/console/docs/pages/"+id, tok, "base_version=0&title=Stale", ""); code != 409 || !strings.Contains(body, "problem") {
			t.Fatalf("stale save: %d %s", code, body)
		}
		code, _, _ = do("POST", "/console/docs/pages/"+id, tok, "base_version=1&title=&notes=", "")
		if code != 303 {
			t.Fatalf("clear: %d", code)
		}
		if d, _ := p.Document(ctx, content.PagesCollection, id); len(d.Fields) != 0 || d.Version != 2 {
			t.Fatalf("cleared: %+v", d)
		}
		if code, _, _ = do("POST", "/console/docs/pages/"+id+"/delete", tok, "x=1", ""); code != 409 {
			t.Fatalf("delete of a document with history, unforced: %d", code)
		}
		if code, h, _ = do("POST", "/console/docs/pages/"+id+"/delete", tok, "force=on", ""); code != 303 || h.Get("Location") != "/console/docs/pages" || noticeSet(h, tok) == "" {
			t.Fatalf("forced delete: %d %v", code, h)
		}
	})
}

// Saving a page document's form keeps the rich text the form cannot show:
// a save without changes keeps the notes as they were, and an edit keeps
// the marks and links of the text it did not touch.
func TestConsoleSaveKeepsRichNotes(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p, tok, do, _ := docsServer(t, b)
		id := mustEventID(t, p)
		notes := `[{"_type":"block","_key":"b1","style":"h2","markDefs":[{"_key":"l1","_type":"link","href":"https://example.com/"}],` +
			`"children":[{"_type":"span","_key":"s1","text":"See ","marks":[]},{"_type":"span","_key":"s2","text":"the docs","marks":["l1"]}]},` +
			`{"_type":"block","_key":"b2","children":[{"_type":"span","_key":"s3","text":"Second.","marks":["strong"]}]}]`
		if code, _, body := do("PUT", "/api/docs/pages/"+id, tok, "", `{"base_version":0,"set":{"notes":`+notes+`}}`); code != 200 {
			t.Fatalf("put: %d %s", code, body)
		}
		if code, _, body := do("GET", "/console/docs/pages/"+id, tok, "", ""); code != 200 || !strings.Contains(body, "See the docs\n\nSecond.</textarea>") {
			t.Fatalf("the form: %d %s", code, body)
		}
		form := url.Values{"base_version": {"1"}, "title": {""}, "notes": {"See the docs\r\n\r\nSecond."}}
		if code, h, body := do("POST", "/console/docs/pages/"+id, tok, form.Encode(), ""); code != 303 || !strings.HasPrefix(noticeSet(h, tok), "saved version 2") {
			t.Fatalf("save unchanged: %d %v %s", code, h, body)
		}
		d, err := p.Document(ctx, content.PagesCollection, id)
		if err != nil || d.Version != 2 || string(d.Fields["notes"]) != notes {
			t.Fatalf("saved unchanged: version %d notes %s, want %s (%v)", d.Version, d.Fields["notes"], notes, err)
		}
		form = url.Values{"base_version": {"2"}, "title": {""}, "notes": {"See the fine docs\r\n\r\nSecond!"}}
		if code, h, body := do("POST", "/console/docs/pages/"+id, tok, form.Encode(), ""); code != 303 || !strings.HasPrefix(noticeSet(h, tok), "saved version 3") {
			t.Fatalf("save an edit: %d %v %s", code, h, body)
		}
		d, err = p.Document(ctx, content.PagesCollection, id)
		want := `[{"_key":"b1","_type":"block","children":[{"_key":"s1","_type":"span","marks":[],"text":"See "},{"_key":"s2","_type":"span","marks":["l1"],"text":"the fine docs"}],` +
			`"markDefs":[{"_key":"l1","_type":"link","href":"https://example.com/"}],"style":"h2"},` +
			`{"_key":"b2","_type":"block","children":[{"_key":"s3","_type":"span","marks":["strong"],"text":"Second!"}]}]`
		if err != nil || string(d.Fields["notes"]) != want {
			t.Fatalf("saved edit: %s\nwant %s (%v)", d.Fields["notes"], want, err)
		}
	})
}

// A run a live worker drives offers no Resume (it would be refused as
// held), only the abort.
func TestConsoleMigrationHeldByAWorker(t *testing.T) {
	ctx := context.Background()
	p, tok, do, _ := docsServer(t, sqltest.Backends()[0])
	if _, err := p.CreateCollection(ctx, "ann", "things", []string{"n:text"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ImportDocuments(ctx, "ann", "things", "seed", strings.NewReader("{\"n\":\"1\"}\n")); err != nil {
		t.Fatal(err)
	}
	run, err := p.DB().Content().StartRun(ctx, "things", "n", content.Number, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DB().Content().ClaimRun(ctx, run.ID, "worker-9", time.Hour); err != nil {
		t.Fatal(err)
	}
	code, _, body := do("GET", "/console/migrations/"+run.ID, tok, "", "")
	if code != 200 || strings.Contains(body, "/resume") || !strings.Contains(body, "/abort") || !strings.Contains(body, "worker-9") {
		t.Fatalf("a held run's page: %d\n%s", code, body)
	}
}

// A page document's editor names the change it corrects, by its title,
// with links to the change's console page; an ID no change has says so.
func TestPageDocumentEditorNamesItsChange(t *testing.T) {
	ctx := context.Background()
	p, tok, do, _ := docsServer(t, sqltest.Backends()[0])
	st := p.DB().Ingest()
	if _, err := st.AddSource(ctx, ingest.NewSource{Name: "blog", Kind: "feed", Location: "https://example.org/blog.xml", Interval: time.Minute, RetryBudget: 3}); err != nil {
		t.Fatal(err)
	}
	c, err := st.Claim(ctx, "blog", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := st.Settle(ctx, c, ingest.Settlement{Cursor: "1", NextDueAt: time.Now(),
		Items: []tidemark.Item{{Key: "1", Title: "Release <1>", OccurredAt: time.Now(), Evidence: []byte("out")}}})
	if err != nil || len(rep.EventIDs) != 1 {
		t.Fatalf("settle: %v %+v", err, rep)
	}
	id := rep.EventIDs[0]
	code, _, body := do("GET", "/console/docs/pages/"+id, tok, "", "")
	if code != 200 || !strings.Contains(body, `<a href="/status/events/`+id+`">Release &lt;1&gt;</a>`) || !strings.Contains(body, "blog") {
		t.Errorf("the editor of a change's page document: %d\n%s", code, body)
	}
	other := "01J0000000000000000000000B"
	if code, _, body := do("GET", "/console/docs/pages/"+other, tok, "", ""); code != 200 || !strings.Contains(body, "no change has this ID") {
		t.Errorf("the editor of a page document no change has: %d\n%s", code, body)
	}
}
