package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
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
