package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

// The API names its own inputs: an error from an operation the CLI shares
// names the JSON field (or query parameter) that was wrong or that would
// do it, never a command-line flag.
func TestAPIErrorsNameTheirFields(t *testing.T) {
	ctx := context.Background()
	env := sqltest.NewEnv(17)
	dbURL := sqltest.Backends()[0].NewURL(t)
	db := sqltest.MustOpenURL(t, dbURL, env)
	cfg := pipeline.Defaults()
	cfg.Home, cfg.Database = t.TempDir(), dbURL
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st := db.Ingest()
	if _, err := st.AddSource(ctx, ingest.NewSource{Name: "blog", Kind: "feed", Location: "https://example.org/feed.xml", Interval: time.Minute, RetryBudget: 3}); err != nil {
		t.Fatal(err)
	}
	c, err := st.Claim(ctx, "blog", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Settle(ctx, c, ingest.Settlement{Cursor: "1", NextDueAt: env.Clock.Now(),
		Items: []tidemark.Item{{Key: "1", Title: "t", OccurredAt: env.Clock.Now(), Evidence: []byte("e")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Content().CreateCollection(ctx, "notes", []content.Field{{Name: "n", Type: content.Text}}); err != nil {
		t.Fatal(err)
	}
	doc, err := db.Content().Put(ctx, "notes", content.Put{Set: content.Fields{"n": json.RawMessage(`"1"`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Content().Put(ctx, "notes", content.Put{ID: doc.ID, BaseVersion: doc.Version, Set: content.Fields{"n": json.RawMessage(`"2"`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Outbox().AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "hooks", Provider: "webhook", Settings: map[string]string{"url": "http://127.0.0.1:1/"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Outbox().Draft(ctx, outbox.Draft{Lane: "hooks", Target: "t", Body: "b"}); err != nil {
		t.Fatal(err)
	}
	token, _, err := db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&web.Server{Ingest: st, Auth: db.Auth(), Sources: p, Docs: p, OutboxOps: p, PublishOps: p}).Handler())
	defer srv.Close()

	for _, tc := range []struct {
		method, path, body string
		status             int
		names              string
	}{
		{"POST", "/api/sources", `{"name":"x","kind":"feed","location":"https://example.org/x.xml","interval":"500ms"}`, 400, "invalid interval"},
		{"POST", "/api/sources", `{"name":"x","kind":"feed","location":"https://example.org/x.xml","retry_budget":0}`, 400, "invalid retry_budget"},
		{"POST", "/api/sources/blog/skip", `{}`, 400, "invalid to"},
		{"POST", "/api/migrations", `{"collection":"notes","field":"n","to":"number","batch":100000}`, 400, "invalid batch"},
		{"POST", "/api/migrations", `{"collection":"notes","field":"n","to":"number","batch":0}`, 400, "invalid batch"},
		{"DELETE", "/api/sources/blog", ``, 409, "force"},
		{"DELETE", "/api/docs/notes/" + doc.ID, ``, 409, "force"},
		{"DELETE", "/api/outbox/lanes/hooks", ``, 409, "force"},
		{"PATCH", "/api/outbox/lanes/hooks", `{"min_gap":"-1s"}`, 400, "min_gap"},
		{"GET", "/api/sources/nope", ``, 404, `source "nope": not found`},
		{"GET", "/api/outbox/lanes/nope", ``, 404, `lane "nope": not found`},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer "+token)
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tc.status || !strings.Contains(e.Error, tc.names) || strings.Contains(e.Error, "--") || strings.Contains(e.Error, "tidemark: ") {
			t.Errorf("%s %s %s: %d %q (%v), want %d naming %q, no flag and no package prefix", tc.method, tc.path, tc.body, resp.StatusCode, e.Error, err, tc.status, tc.names)
		}
	}
}

// An error says each thing once: a request that is not signed in is told
// so, once, and not also that something was "not found".
func TestNotSignedInSaysSoOnce(t *testing.T) {
	ctx := context.Background()
	db := sqltest.MustOpen(t, sqltest.Backends()[0], sqltest.NewEnv(3))
	srv := httptest.NewServer((&web.Server{Ingest: db.Ingest(), Auth: db.Auth(), Sources: struct{ web.SourceOps }{}}).Handler())
	defer srv.Close()
	for _, tc := range []struct{ method, path, token string }{
		{"GET", "/api/sources", ""},
		{"GET", "/api/sources", "tmk_nosuchtoken"},
		{"POST", "/api/sources/x/pause", "tmk_nosuchtoken"},
	} {
		req, _ := http.NewRequestWithContext(ctx, tc.method, srv.URL+tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusUnauthorized || strings.Count(e.Error, "not signed in") != 1 || strings.Contains(e.Error, "not found") {
			t.Errorf("%s %s: %d %q (%v), want 401 saying once that it is not signed in", tc.method, tc.path, resp.StatusCode, e.Error, err)
		}
	}
}

// A token reaches neither the server's files nor, through a source that
// allows them, its private network, unless the server admits them: the
// API refuses to test or add a directory outside its roots, and to let a
// source reach private addresses, and says how the operator admits them.
func TestAPIAddsOnlyWhatTheServerAdmits(t *testing.T) {
	ctx := context.Background()
	cfg := pipeline.Defaults()
	cfg.Home, cfg.Database = t.TempDir(), sqltest.Backends()[0].NewURL(t)
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.AddSource(ctx, ingest.NewSource{Name: "blog", Kind: "feed", Location: "https://example.org/feed.xml", Interval: time.Minute, RetryBudget: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddLane(ctx, "hooks", "webhook", outbox.LaneChange{Settings: map[string]string{"url": "https://hooks.example/h"}}, "ops"); err != nil {
		t.Fatal(err)
	}
	token, _, err := p.DB().Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	secrets, notes := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "id_ed25519"), []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(a kinds.Admission) func(method, path, body string) (int, string) {
		srv := httptest.NewServer((&web.Server{Ingest: p.DB().Ingest(), Auth: p.DB().Auth(), Sources: p, OutboxOps: p, Admission: a}).Handler())
		t.Cleanup(srv.Close)
		return func(method, path, body string) (int, string) {
			req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
	}
	closed := serve(kinds.Admission{})
	for _, tc := range []struct{ method, path, body, says string }{
		{"POST", "/api/sources/test", `{"location":"` + secrets + `","kind":"dir","evidence":true,"config":{"hidden":"true"}}`, "--local-root"},
		{"POST", "/api/sources", `{"location":"` + secrets + `"}`, "--local-root"},
		{"POST", "/api/sources", `{"location":"https://example.org/x.xml","kind":"feed","allow_private":true}`, "--allow-private"},
		{"PATCH", "/api/sources/blog", `{"allow_private":true}`, "--allow-private"},
		// A lane would send the server's other secrets, or write inside
		// its network.
		{"POST", "/api/outbox/lanes", `{"name":"x","provider":"ntfy","settings":{"base_url":"https://ntfy.example","token_env":"AWS_SECRET_ACCESS_KEY"}}`, "TIDEMARK_"},
		{"POST", "/api/outbox/lanes", `{"name":"x","provider":"webhook","settings":{"url":"http://169.254.169.254/latest/meta-data/"}}`, "--allow-private"},
		{"POST", "/api/outbox/lanes", `{"name":"x","provider":"webhook","settings":{"url":"https://hooks.example/x","list_url":"http://127.0.0.1:9/list"}}`, "--allow-private"},
		{"PATCH", "/api/outbox/lanes/hooks", `{"settings":{"secret_env":"DATABASE_URL"}}`, "TIDEMARK_"},
	} {
		code, body := closed(tc.method, tc.path, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.says) || strings.Contains(body, "PRIVATE KEY") {
			t.Errorf("%s %s %s: %d %s, want 400 saying %q", tc.method, tc.path, tc.body, code, body, tc.says)
		}
	}
	if srcs, _ := p.DB().Ingest().Sources(ctx); len(srcs) != 1 || srcs[0].AllowPrivate {
		t.Fatalf("a refused request changed the sources: %+v", srcs)
	}
	if ls, _ := p.DB().Outbox().Lanes(ctx); len(ls) != 1 || ls[0].Settings["secret_env"] != "" {
		t.Fatalf("a refused request changed the lanes: %+v", ls)
	}
	if code, body := closed("POST", "/api/outbox/lanes", `{"name":"ok","provider":"ntfy","settings":{"base_url":"https://ntfy.example","token_env":"TIDEMARK_NTFY_TOKEN"}}`); code != http.StatusCreated {
		t.Errorf("a lane reading a TIDEMARK_ variable: %d %s", code, body)
	}
	open := serve(kinds.Admission{LocalRoots: []string{notes}, AllowPrivate: true})
	if code, body := open("POST", "/api/sources/test", `{"location":"`+secrets+`","kind":"dir"}`); code != http.StatusBadRequest || !strings.Contains(body, "not under") {
		t.Errorf("a directory outside the roots: %d %s", code, body)
	}
	if code, body := open("POST", "/api/sources", `{"location":"`+notes+`","name":"notes"}`); code != http.StatusCreated && code != http.StatusOK {
		t.Errorf("a directory under a root: %d %s", code, body)
	}
	if code, body := open("PATCH", "/api/sources/blog", `{"allow_private":true}`); code != http.StatusOK {
		t.Errorf("allow_private where admitted: %d %s", code, body)
	}
}
