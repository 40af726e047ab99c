package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

func TestAPIAndStatus(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(5)
		db := sqltest.MustOpen(t, b, env)
		st := db.Ingest()
		for _, name := range []string{"good", "down"} {
			if _, err := st.AddSource(ctx, ingest.NewSource{Name: name, Kind: "git", Location: "/x/" + name, Interval: time.Minute, RetryBudget: 1}); err != nil {
				t.Fatal(err)
			}
		}
		c, _ := st.Claim(ctx, "good", "w", time.Minute)
		if _, err := st.Settle(ctx, c, ingest.Settlement{Items: []tidemark.Item{{Key: "k", Title: "<script>x</script>", Evidence: []byte("e")}}, Cursor: "c1", NextDueAt: env.Clock.Now()}); err != nil {
			t.Fatal(err)
		}
		c, _ = st.Claim(ctx, "down", "w", time.Minute)
		if _, err := st.Fail(ctx, c, ingest.Failure{Outcome: tidemark.OutcomeUnreachable, Reason: "connection refused", NextDueAt: env.Clock.Now(), Terminal: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Outbox().AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "hooks", Provider: "webhook", Settings: map[string]string{"url": "http://127.0.0.1:1/"}, MinGap: tidemark.Duration(time.Second)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Outbox().Draft(ctx, outbox.Draft{Lane: "hooks", Target: "chat", Body: "<b>hello</b>"}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Content().CreateCollection(ctx, "notes", []content.Field{{Name: "score", Type: content.Text}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Content().StartRun(ctx, "notes", "score", content.Number, 10); err != nil {
			t.Fatal(err)
		}
		token, _, err := db.Auth().CreateToken(ctx, "ops")
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer((&web.Server{Ingest: st, Outbox: db.Outbox(), Migrations: db.Content(), Auth: db.Auth()}).Handler())
		defer srv.Close()

		get := func(path string) (int, string) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		code, body := get("/status")
		if code != 200 || !strings.Contains(body, `class="h-ok">ok`) || !strings.Contains(body, `class="h-terminal">terminal`) || !strings.Contains(body, "connection refused") {
			t.Fatalf("status page %d:\n%s", code, body)
		}
		for _, want := range []string{`<a href="/status/lanes/hooks">hooks</a>`, "notes.score", "text → number", `class="m-running">running`} {
			if !strings.Contains(body, want) {
				t.Errorf("status page lacks %s", want)
			}
		}
		code, body = get("/status/lanes/hooks")
		if code != 200 || !strings.Contains(body, "&lt;b&gt;hello&lt;/b&gt;") || !strings.Contains(body, "pending") {
			t.Fatalf("lane page %d:\n%s", code, body)
		}
		code, body = get("/api/outbox/intents?lane=hooks&state=pending")
		if code != 200 || !strings.Contains(body, `"target": "chat"`) {
			t.Fatalf("/api/outbox/intents %d %s", code, body)
		}
		code, body = get("/api/migrations")
		if code != 200 || !strings.Contains(body, `"field": "score"`) {
			t.Fatalf("/api/migrations %d %s", code, body)
		}
		code, body = get("/api/sources")
		var srcs web.Page[tidemark.Source]
		if code != 200 || json.Unmarshal([]byte(body), &srcs) != nil || len(srcs.Items) != 2 || srcs.Next != "" {
			t.Fatalf("/api/sources %d %s", code, body)
		}
		code, body = get("/api/events?source=good")
		if code != 200 || !strings.Contains(body, `\u003cscript\u003e`) {
			t.Fatalf("/api/events %d %s", code, body)
		}
		code, body = get("/metrics")
		if code != 200 {
			t.Fatalf("/metrics %d:\n%s", code, body)
		}
		for _, want := range []string{`tidemark_runs_total{outcome="unreachable"} 1`, `tidemark_runs_total{outcome="items"} 1`,
			`tidemark_source_health{health="terminal",kind="git",source="down"} 1`, "tidemark_database_up 1"} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s:\n%s", want, body)
			}
		}
		for path, want := range map[string]int{
			"/api/sources/nope":              404,
			"/api/runs?limit=abc":            400,
			"/api/runs?outcome=fine":         400,
			"/status/sources/nope":           404,
			"/status/sources/down":           200,
			"/healthz":                       200,
			"/status/lanes/nope":             404,
			"/api/outbox/intents?state=lost": 400,
			"/api/outbox/lanes":              200,
		} {
			if code, body := get(path); code != want {
				t.Errorf("%s: %d, want %d: %s", path, code, want, body)
			}
		}
	})
}
