package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

// fakeOps performs the source operations on a real store; a test fetch and
// a run are canned (the pipeline's own tests cover them).
type fakeOps struct {
	*sqlstore.IngestStore
	tested, ran []string
}

func (f *fakeOps) AddSource(ctx context.Context, ns ingest.NewSource) (tidemark.Source, error) {
	if ns.Kind == "" {
		ns.Kind = "feed"
	}
	if ns.Name == "" {
		ns.Name = "derived"
	}
	return f.IngestStore.AddSource(ctx, ns)
}

func (f *fakeOps) TestSource(_ context.Context, req ingest.TestRequest) (ingest.TestReport, error) {
	f.tested = append(f.tested, req.Source.Location)
	return ingest.TestReport{Kind: "feed", Name: "derived", Location: req.Source.Location, Outcome: tidemark.OutcomeItems,
		Items: []ingest.TestItem{{Key: "p1", Title: "First <post>", EvidenceBytes: 5, EvidenceSHA256: "abcdef0123456789"}}}, nil
}

func (f *fakeOps) SetSource(ctx context.Context, ref string, ch ingest.Settings, actor string) (tidemark.Source, error) {
	return f.Set(ctx, ref, ch, actor)
}

func (f *fakeOps) PauseSource(ctx context.Context, ref, actor string) (tidemark.Source, error) {
	return f.SetState(ctx, ref, tidemark.SourcePaused, actor)
}

func (f *fakeOps) ResumeSource(ctx context.Context, ref, actor string) (tidemark.Source, error) {
	return f.SetState(ctx, ref, tidemark.SourceActive, actor)
}

func (f *fakeOps) RetrySource(ctx context.Context, ref, actor, note string) (tidemark.Source, error) {
	return f.Retry(ctx, ref, actor, note)
}

func (f *fakeOps) SkipSource(ctx context.Context, ref, to, actor, note string) (tidemark.Source, error) {
	src, err := f.Source(ctx, ref)
	if err != nil {
		return src, err
	}
	return f.Skip(ctx, ref, src.CursorVersion, to, actor, note)
}

func (f *fakeOps) RunSource(_ context.Context, ref string, _ int, _ func(ingest.Report, error)) ([]ingest.Report, error) {
	f.ran = append(f.ran, ref)
	if ref == "down" {
		// a run recorded as failed, as the pipeline answers it
		return []ingest.Report{{Source: ref, Outcome: tidemark.OutcomeInvalid, Error: "not a feed"}},
			fmt.Errorf("source down: the run failed: invalid: not a feed: %w", tidemark.ErrUnavailable)
	}
	return []ingest.Report{{Source: ref, Outcome: tidemark.OutcomeEmpty}}, nil
}

type client struct {
	t     *testing.T
	base  string
	token string
	http  *http.Client
}

func (c *client) do(method, path, contentType, body string) response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(b)}
}

func (c *client) form(path string, v url.Values) response {
	c.t.Helper()
	return c.do(http.MethodPost, path, "application/x-www-form-urlencoded", v.Encode())
}

func (c *client) get(path string) response { c.t.Helper(); return c.do(http.MethodGet, path, "", "") }

// mustConsole serves a store with fakeOps and one source with a run that
// froze two events, one failing unreachable, one empty.
func mustConsole(t *testing.T, b sqltest.Backend) (*client, *fakeOps, *sqlstore.DB) {
	t.Helper()
	ctx := context.Background()
	env := sqltest.NewEnv(7)
	db := sqltest.MustOpen(t, b, env)
	st := db.Ingest()
	for _, name := range []string{"blog", "down", "quiet"} {
		if _, err := st.AddSource(ctx, ingest.NewSource{Name: name, Kind: "feed", Location: "https://example.org/" + name, Interval: time.Minute, RetryBudget: 3}); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := st.Claim(ctx, "blog", "w", time.Minute)
	items := []tidemark.Item{{Key: "a", Title: "Post A", OccurredAt: env.Clock.Now(), Evidence: []byte("evidence a")},
		{Key: "b", Title: "Post B", OccurredAt: env.Clock.Now().Add(time.Second), Evidence: []byte("evidence b")}}
	if _, err := st.Settle(ctx, c, ingest.Settlement{Items: items, Cursor: "c1", NextDueAt: env.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	c, _ = st.Claim(ctx, "down", "w", time.Minute)
	if _, err := st.Fail(ctx, c, ingest.Failure{Outcome: tidemark.OutcomeUnreachable, Reason: "connection refused", NextDueAt: env.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	c, _ = st.Claim(ctx, "quiet", "w", time.Minute)
	if _, err := st.Settle(ctx, c, ingest.Settlement{Cursor: "q", NextDueAt: env.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	token, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	ops := &fakeOps{IngestStore: st}
	srv := httptest.NewServer((&web.Server{Ingest: st, Sources: ops, Auth: db.Auth()}).Handler())
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &client{t: t, base: srv.URL, token: token, http: hc}, ops, db
}

func mustRedirect(t *testing.T, what string, r response, to string) {
	t.Helper()
	if r.Code != http.StatusSeeOther || r.Header.Get("Location") != to {
		t.Fatalf("%s: %d to %q, want 303 to %q\n%s", what, r.Code, r.Header.Get("Location"), to, r.Body)
	}
}

func mustContain(t *testing.T, what string, r response, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(r.Body, w) {
			t.Fatalf("%s (%d) lacks %q:\n%s", what, r.Code, w, r.Body)
		}
	}
}

func TestConsoleSources(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		c, ops, db := mustConsole(t, b)
		ctx := context.Background()

		// Health at a glance: unreachable is not empty, and neither is ok.
		r := c.get("/status")
		mustContain(t, "status", r, `class="h-unreachable">unreachable`, `class="h-empty">empty`, `class="h-ok">ok`, `action="/status/sources/test"`)

		// The preview fetches and stores nothing; the form comes back filled.
		form := url.Values{"location": {"https://example.org/new.xml"}, "interval": {"30m"}, "retry_budget": {"4"}}
		r = c.form("/status/sources/test", form)
		mustContain(t, "preview", r, "First &lt;post&gt;", "1 would become events", `value="derived"`, `value="30m"`)
		if srcs, _ := db.Ingest().Sources(ctx); len(srcs) != 3 || len(ops.tested) != 1 {
			t.Fatalf("the preview stored a source or did not fetch: %d sources, %v", len(srcs), ops.tested)
		}
		bad := url.Values{"location": {"https://example.org/x"}, "interval": {"soon"}, "retry_budget": {"4"}}
		r = c.form("/status/sources", bad)
		if r.Code != http.StatusBadRequest || !strings.Contains(r.Body, "want a duration") || !strings.Contains(r.Body, `value="https://example.org/x"`) {
			t.Fatalf("bad add: %d\n%s", r.Code, r.Body)
		}

		form.Set("name", "new")
		mustRedirect(t, "add", c.form("/status/sources", form), "/status/sources/new")
		r = c.get("/status/sources/new")
		mustContain(t, "added source", r, "added feed source &#34;new&#34;", "every 30m0s")
		if r = c.get("/status/sources/new"); strings.Contains(r.Body, "added feed source") {
			t.Fatal("the notice showed twice")
		}

		mustRedirect(t, "pause", c.form("/status/sources/new/pause", nil), "/status/sources/new")
		mustRedirect(t, "set", c.form("/status/sources/new/set", url.Values{"interval": {"1h"}, "retry_budget": {"4"}}), "/status/sources/new")
		mustRedirect(t, "run", c.form("/status/sources/blog/run", nil), "/status/sources/blog")
		mustContain(t, "after run", c.get("/status/sources/blog"), "ran blog: empty")
		mustRedirect(t, "rename", c.form("/status/sources/new/rename", url.Values{"name": {"fresh"}}), "/status/sources/fresh")
		mustRedirect(t, "rename taken", c.form("/status/sources/fresh/rename", url.Values{"name": {"blog"}}), "/status/sources/fresh")
		r = c.get("/status/sources/fresh")
		mustContain(t, "after a refused rename", r, `class="problem" role="alert"`, "already exists", "blog")
		acts, err := db.Ingest().Actions(ctx, "fresh", 10)
		if err != nil || len(acts) != 3 || acts[0].Action != "rename" || acts[1].Action != "set" || acts[1].Note != "interval: 30m0s -> 1h0m0s" ||
			acts[2].Action != "pause" || acts[0].Actor != "ops" {
			t.Fatalf("audit: %v %+v", err, acts)
		}

		// Removal: a confirmation page that says what goes; refused without
		// force, done with it, and listed after.
		mustContain(t, "confirm", c.get("/status/sources/blog/remove"), "2 events with 2 revisions", `name="force"`)
		mustRedirect(t, "unconfirmed", c.form("/status/sources/blog/remove", nil), "/status/sources/blog")
		mustRedirect(t, "unforced", c.form("/status/sources/blog/remove", url.Values{"confirm": {"1"}}), "/status/sources/blog")
		mustContain(t, "refused removal", c.get("/status/sources/blog"), "removing it with force deletes them")
		mustRedirect(t, "forced", c.form("/status/sources/blog/remove", url.Values{"confirm": {"1"}, "force": {"1"}}), "/status")
		r = c.get("/status")
		mustContain(t, "after removal", r, "removed blog and 2 events", "Removed sources")
		if r := c.get("/status/sources/blog"); r.Code != http.StatusNotFound {
			t.Fatalf("removed source page: %d", r.Code)
		}
	})
}

func TestConsoleRunsAndEvents(t *testing.T) {
	c, _, db := mustConsole(t, sqltest.Backends()[0])
	ctx := context.Background()
	r := c.get("/status/runs?outcome=unreachable")
	mustContain(t, "runs by outcome", r, "connection refused")
	if strings.Contains(r.Body, `href="/status/sources/blog"`) {
		t.Fatal("the outcome filter let another source's run through")
	}
	if r := c.get("/status/runs?outcome=bogus"); r.Code != http.StatusBadRequest {
		t.Fatalf("bad outcome: %d", r.Code)
	}
	runs, _ := db.Ingest().Runs(ctx, ingest.RunFilter{SourceID: "blog"})
	r = c.get("/status/runs/" + runs[0].ID)
	mustContain(t, "run page", r, "Post A", "Post B", "2 new")
	evs, _ := db.Ingest().Events(ctx, ingest.EventFilter{SourceID: "blog", Limit: 1})
	r = c.get("/status/events?source=blog")
	mustContain(t, "events", r, "Post A", "Post B")
	r = c.get("/status/events/" + evs[0].ID)
	mustContain(t, "event page", r, "/status/events/"+evs[0].ID+"/evidence/1", "Revisions", "10 bytes")
	var d ingest.EventDetail
	if r := c.get("/api/events/" + evs[0].ID); r.Code != 200 || json.Unmarshal([]byte(r.Body), &d) != nil || len(d.Revisions) != 1 || d.SourceName != "blog" {
		t.Fatalf("/api/events/ID: %d %s", r.Code, r.Body)
	}
	// The page after the newest event holds the other one only.
	r = c.get("/status/events?source=blog&after=" + evs[0].ID)
	if strings.Contains(r.Body, ">"+evs[0].Title+"<") || !strings.Contains(r.Body, "Post A") {
		t.Fatalf("the page after %s (%s):\n%s", evs[0].ID, evs[0].Title, r.Body)
	}
}

func TestAPISourceWrites(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		c, ops, db := mustConsole(t, b)
		ctx := context.Background()
		const js = "application/json"
		r := c.do(http.MethodPost, "/api/sources", js, `{"name":"api","location":"https://example.org/api.xml","interval":"2h","retry_budget":2}`)
		var src tidemark.Source
		if r.Code != http.StatusCreated || json.Unmarshal([]byte(r.Body), &src) != nil || src.Interval.Std() != 2*time.Hour || r.Header.Get("Location") != "/api/sources/api" {
			t.Fatalf("POST /api/sources: %d %s", r.Code, r.Body)
		}
		mustJSONError(t, "unknown field", c.do(http.MethodPost, "/api/sources", js, `{"where":"x"}`))
		if r := c.do(http.MethodPost, "/api/sources/test", js, `{"location":"https://example.org/t.xml"}`); r.Code != 200 || !strings.Contains(r.Body, `"outcome": "items"`) {
			t.Fatalf("POST /api/sources/test: %d %s", r.Code, r.Body)
		}
		r = c.do(http.MethodPatch, "/api/sources/api", js, `{"name":"api2","allow_private":true}`)
		if r.Code != 200 || json.Unmarshal([]byte(r.Body), &src) != nil || src.Name != "api2" || !src.AllowPrivate {
			t.Fatalf("PATCH: %d %s", r.Code, r.Body)
		}
		if r := c.do(http.MethodPatch, "/api/sources/api2", js, `{"name":"x","retry_budget":0}`); r.Code != 400 {
			t.Fatalf("bad PATCH: %d %s", r.Code, r.Body)
		}
		if _, err := db.Ingest().Source(ctx, "api2"); err != nil {
			t.Fatalf("a refused PATCH renamed the source: %v", err)
		}
		for _, op := range []string{"pause", "resume", "retry"} {
			if r := c.do(http.MethodPost, "/api/sources/api2/"+op, "", ""); r.Code != 200 {
				t.Fatalf("%s: %d %s", op, r.Code, r.Body)
			}
		}
		if r := c.do(http.MethodPost, "/api/sources/api2/run", "", ""); r.Code != 200 || !strings.Contains(r.Body, `"reports"`) || len(ops.ran) != 1 {
			t.Fatalf("run: %d %s", r.Code, r.Body)
		}
		// A run that failed answers its reports with the error's status,
		// class and exit code.
		r = c.do(http.MethodPost, "/api/sources/down/run", "", "")
		var failed struct {
			Reports  []ingest.Report `json:"reports"`
			Error    string          `json:"error"`
			Class    string          `json:"class"`
			ExitCode int             `json:"exit_code"`
		}
		if r.Code != http.StatusServiceUnavailable || json.Unmarshal([]byte(r.Body), &failed) != nil || len(failed.Reports) != 1 ||
			failed.Class != "unavailable" || failed.ExitCode != tidemark.ExitUnavailable || !strings.Contains(failed.Error, "not a feed") {
			t.Fatalf("a failed run: %d %s", r.Code, r.Body)
		}
		if r := c.do(http.MethodPost, "/api/sources/api2/explode", "", ""); r.Code != 404 {
			t.Fatalf("unknown op: %d", r.Code)
		}
		r = c.do(http.MethodDelete, "/api/sources/blog", "", "")
		if r.Code != http.StatusConflict || !strings.Contains(mustJSONError(t, "unforced delete", r), "2 events") {
			t.Fatalf("unforced DELETE: %d %s", r.Code, r.Body)
		}
		var rm ingest.Removal
		r = c.do(http.MethodDelete, "/api/sources/blog?force=true", "", "")
		if r.Code != 200 || json.Unmarshal([]byte(r.Body), &rm) != nil || rm.Events != 2 || rm.Action.Actor != "ops" {
			t.Fatalf("forced DELETE: %d %s", r.Code, r.Body)
		}
		acts, _ := db.Ingest().Actions(ctx, "api2", 10)
		if len(acts) != 5 || acts[4].Action != "rename" || acts[3].Action != "set" || acts[0].Actor != "ops" {
			t.Fatalf("audit: %+v", acts)
		}
	})
}

// A server without the source operations serves the reads and no writes.
func TestSourceWritesNeedOps(t *testing.T) {
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(1))
	token, _, err := db.Auth().CreateToken(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	serve := mustServe(t, db, nil)
	if r := serve(http.MethodPost, "/api/sources", token, nil); r.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /api/sources without ops: %d", r.Code)
	}
	if r := serve(http.MethodGet, "/status", token, nil); r.Code != 200 || strings.Contains(r.Body, "/status/sources/test") {
		t.Fatalf("status without ops offers the add form: %d", r.Code)
	}
}

// A source may be named like a route's fixed word ("test"): its page, its
// API object and its writes are reached by its name, and the fixed routes
// (POST /api/sources/test, /status/sources/test) keep their meaning.
func TestASourceNamedTestIsReachable(t *testing.T) {
	c, _, db := mustConsole(t, sqltest.Backends()[0])
	if _, err := db.Ingest().AddSource(context.Background(), ingest.NewSource{Name: "test", Kind: "feed", Location: "https://example.org/test",
		Interval: time.Minute, RetryBudget: 3}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []response{c.get("/status/sources/test"), c.get("/api/sources/test")} {
		if r.Code != 200 || !strings.Contains(r.Body, "https://example.org/test") {
			t.Fatalf("the source named test: %d\n%s", r.Code, r.Body)
		}
	}
	if r := c.do(http.MethodPatch, "/api/sources/test", "application/json", `{"interval":"2h"}`); r.Code != 200 || !strings.Contains(r.Body, `"interval": "2h0m0s"`) {
		t.Fatalf("PATCH the source named test: %d %s", r.Code, r.Body)
	}
	mustRedirect(t, "pause the source named test", c.form("/status/sources/test/pause", nil), "/status/sources/test")
	if src, err := db.Ingest().Source(context.Background(), "test"); err != nil || src.State != tidemark.SourcePaused {
		t.Fatalf("after the pause: %+v %v", src, err)
	}
}

// A console page that fails is a page saying what went wrong, with the
// status of its kind: never a JSON error, never a bare "404 page not found".
func TestConsoleFailuresArePages(t *testing.T) {
	c, _, _ := mustConsole(t, sqltest.Backends()[0])
	for _, path := range []string{"/status/sources/nope", "/status/runs/nope", "/status/events/nope"} {
		r := c.get(path)
		if r.Code != http.StatusNotFound || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || !strings.Contains(r.Body, "nope") ||
			!strings.Contains(r.Body, "not found") {
			t.Errorf("GET %s: %d %s\n%s", path, r.Code, r.Header.Get("Content-Type"), r.Body)
		}
	}
	if r := c.get("/api/sources/nope"); r.Code != http.StatusNotFound || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("GET /api/sources/nope: %d %s", r.Code, r.Header.Get("Content-Type"))
	}
}

// An API write reads JSON only: a body sent as a form (curl -d without a
// Content-Type) is refused with what was wrong, never read as the empty
// object, so a skip with a target never skips to the head and an add
// never adds a source nobody described.
func TestAPIWritesRefuseABodyThatIsNotJSON(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		c, ops, db := mustConsole(t, b)
		ctx := context.Background()
		before, err := db.Ingest().Source(ctx, "blog")
		if err != nil {
			t.Fatal(err)
		}
		const form = "application/x-www-form-urlencoded"
		for _, w := range []struct{ method, path, body string }{
			{http.MethodPost, "/api/sources/blog/skip", `{"to":"c0","note":"why"}`},
			{http.MethodPost, "/api/sources", `{"location":"https://example.org/x.xml","name":"x"}`},
			{http.MethodPatch, "/api/sources/blog", `{"name":"renamed"}`},
			{http.MethodPost, "/api/sources/blog/run", `{}`},
		} {
			for _, ct := range []string{form, "text/plain"} {
				r := c.do(w.method, w.path, ct, w.body)
				msg := mustJSONError(t, w.method+" "+w.path+" as "+ct, r)
				if r.Code != http.StatusBadRequest || !strings.Contains(msg, "Content-Type") || !strings.Contains(msg, ct) {
					t.Errorf("%s %s as %s: %d %q, want 400 that names the Content-Type", w.method, w.path, ct, r.Code, msg)
				}
			}
		}
		after, err := db.Ingest().Source(ctx, "blog")
		if err != nil || after.Cursor != before.Cursor || after.CursorVersion != before.CursorVersion {
			t.Fatalf("a refused write moved blog: %+v → %+v (%v)", before, after, err)
		}
		if srcs, _ := db.Ingest().Sources(ctx); len(srcs) != 3 || len(ops.ran) != 0 {
			t.Fatalf("refused writes added sources (%d) or ran some (%v)", len(srcs), ops.ran)
		}
		// One object, and nothing after it: a second value is not read
		// as if it were not there.
		for _, body := range []string{`{}{"note":"x"}`, `{"note":"n"} garbage`, `{"note":"n"}{}`} {
			r := c.do(http.MethodPost, "/api/sources/quiet/pause", "application/json", body)
			if msg := mustJSONError(t, "trailing data", r); r.Code != http.StatusBadRequest || !strings.Contains(msg, "after") {
				t.Errorf("body %s: %d %q, want 400 saying there is something after the object", body, r.Code, msg)
			}
		}
		// JSON with its type, with a charset, or with no Content-Type at all
		// is read; an empty body is the empty object.
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", ""} {
			if r := c.do(http.MethodPost, "/api/sources/quiet/pause", ct, `{"note":"n"}`); r.Code != 200 {
				t.Fatalf("pause as %q: %d %s", ct, r.Code, r.Body)
			}
			if r := c.do(http.MethodPost, "/api/sources/quiet/resume", ct, ""); r.Code != 200 {
				t.Fatalf("resume with no body as %q: %d %s", ct, r.Code, r.Body)
			}
		}
	})
}

// A terminal window waits for an operator: its page offers retry and skip,
// not a run (which would be refused), shows no time it is due at, and says
// its attempts against the budget without claiming more of it than there is.
func TestConsoleTerminalSourceOffersRetryNotRun(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		c, _, db := mustConsole(t, b)
		ctx := context.Background()
		st := db.Ingest()
		// "down" failed once of its 3; an outage goes on past the budget
		// until the policy calls it terminal.
		for i := 0; i < 3; i++ {
			cl, err := st.Claim(ctx, "down", "w", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Fail(ctx, cl, ingest.Failure{Outcome: tidemark.OutcomeUnreachable, Reason: "connection refused",
				NextDueAt: time.Now(), Terminal: i == 2}); err != nil {
				t.Fatal(err)
			}
		}
		if s, err := st.Source(ctx, "down"); err != nil || s.Window != tidemark.WindowTerminal || s.WindowAttempts != 4 {
			t.Fatalf("fixture: %v %+v", err, s)
		}
		r := c.get("/status/sources/down")
		mustContain(t, "terminal source", r, `action="/status/sources/down/retry"`, `action="/status/sources/down/skip"`,
			"budget of 3 attempts spent", "not due: an operator must retry or skip the window")
		for _, never := range []string{`action="/status/sources/down/run"`, "4 of 3", "Run now"} {
			if strings.Contains(r.Body, never) {
				t.Errorf("a terminal source's page says %q:\n%s", never, r.Body)
			}
		}
		r = c.get("/status")
		for _, never := range []string{"4/3"} {
			if strings.Contains(r.Body, never) {
				t.Errorf("the status page says %q", never)
			}
		}
	})
}

// The console's looks say the same as its words: an error notice has the
// error style (never the success style's green stripe), every failing
// health is a badge, and an operator action that did not move the cursor
// does not show an arrow between nothing and nothing.
func TestConsoleLooksSayWhatWordsSay(t *testing.T) {
	c, _, db := mustConsole(t, sqltest.Backends()[0])
	bad := url.Values{"location": {"https://example.org/x"}, "interval": {"soon"}, "retry_budget": {"4"}}
	r := c.form("/status/sources", bad)
	mustContain(t, "refused add", r, `class="problem" role="alert"`)
	if strings.Contains(r.Body, "notice error") || strings.Contains(r.Body, ".notice.error") {
		t.Errorf("an error notice is styled as a success notice with another background:\n%s", r.Body)
	}
	r = c.get("/status")
	for _, health := range []string{"unreachable", "invalid", "error", "terminal"} {
		if !regexp.MustCompile(`\.h-` + health + `\b[^{]*\{[^}]*background:`).MatchString(r.Body) {
			t.Errorf("health %q is not a badge (no background in its style)", health)
		}
	}
	mustRedirect(t, "pause", c.form("/status/sources/quiet/pause", nil), "/status/sources/quiet")
	mustRedirect(t, "resume", c.form("/status/sources/quiet/resume", nil), "/status/sources/quiet")
	if acts, err := db.Ingest().Actions(context.Background(), "quiet", 10); err != nil || len(acts) != 2 {
		t.Fatalf("actions: %v %+v", err, acts)
	}
	r = c.get("/status/sources/quiet")
	if strings.Contains(r.Body, "</code> → <code>") && strings.Count(r.Body, "<code>q</code> → <code>q</code>") > 0 {
		t.Errorf("a pause shows the cursor moving from where it was to where it was:\n%s", r.Body)
	}
	if strings.Contains(r.Body, "<code></code> → <code></code>") {
		t.Errorf("an action shows an arrow between nothing and nothing")
	}
	mustContain(t, "actions that left the cursor", r, `<td data-label="cursor"><code>q</code> <span class="muted">unchanged</span></td>`)
}

// A git cursor inside a merge is one commit a side; the console names
// each, so that a move of either side shows.
func TestConsoleNamesEachCommitOfAMergeCursor(t *testing.T) {
	c, _, db := mustConsole(t, sqltest.Backends()[0])
	ctx := context.Background()
	st := db.Ingest()
	merge := strings.Repeat("a", 40) + "," + strings.Repeat("b", 40)
	cl, err := st.Claim(ctx, "quiet", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Settle(ctx, cl, ingest.Settlement{Cursor: merge, NextDueAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "status", c.get("/status"), "<code>aaaaaaaaaaaa,bbbbbbbbbbbb</code>")
	mustContain(t, "a long single cursor stays cut", c.get("/status"), "<code>c1</code>")
}

// The audit names what each console write did, as it names the API's
// (source pause, source run, …), never a generic "source op".
func TestConsoleSourceWritesAreAuditedByName(t *testing.T) {
	c, _, _ := mustConsole(t, sqltest.Backends()[0])
	mustRedirect(t, "pause", c.form("/status/sources/blog/pause", nil), "/status/sources/blog")
	mustRedirect(t, "resume", c.form("/status/sources/blog/resume", nil), "/status/sources/blog")
	mustRedirect(t, "set", c.form("/status/sources/blog/set", url.Values{"interval": {"1h"}}), "/status/sources/blog")
	mustRedirect(t, "run", c.form("/status/sources/blog/run", nil), "/status/sources/blog")
	mustRedirect(t, "rename", c.form("/status/sources/blog/rename", url.Values{"name": {"news"}}), "/status/sources/news")
	var page web.Page[tidemark.AuditEntry]
	if r := c.get("/api/audit"); r.Code != 200 || json.Unmarshal([]byte(r.Body), &page) != nil {
		t.Fatalf("/api/audit: %d %s", r.Code, r.Body)
	}
	var got []string
	for _, e := range page.Items {
		if e.Actor == "ops" {
			got = append(got, e.Action+" "+e.Target)
		}
	}
	want := []string{"source rename /status/sources/blog/rename", "source run /status/sources/blog/run",
		"source set /status/sources/blog/set", "source resume /status/sources/blog/resume", "source pause /status/sources/blog/pause"}
	if !slices.Equal(got, want) {
		t.Errorf("audit:\n%q\nwant\n%q", got, want)
	}
	if r := c.form("/status/sources/news/frobnicate", nil); r.Code != http.StatusNotFound && r.Code != http.StatusMethodNotAllowed {
		t.Errorf("an operation there is not: %d", r.Code)
	}
}

// The add form's Every and Retry budget left blank are the defaults, as
// the API's absent interval and retry_budget are, not invalid input.
func TestConsoleAddTakesBlankSettingsAsTheDefaults(t *testing.T) {
	c, _, db := mustConsole(t, sqltest.Backends()[0])
	form := url.Values{"location": {"https://example.org/new.xml"}, "name": {"new"}, "interval": {""}, "retry_budget": {" "}}
	mustRedirect(t, "add with blank settings", c.form("/status/sources", form), "/status/sources/new")
	src, err := db.Ingest().Source(context.Background(), "new")
	if err != nil || src.Interval.Std() != ingest.DefaultInterval || src.RetryBudget != ingest.DefaultRetryBudget {
		t.Fatalf("source %+v %v, want the default interval and retry budget", src, err)
	}
}
