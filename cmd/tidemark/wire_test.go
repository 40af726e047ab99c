package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// TestPipelinesMeet runs the pipelines end to end through the binary: a
// published page drafts its outbox intents in the mark's transaction, run
// --once delivers them, a second delivery sends nothing again, and an
// edited page document republishes its page with the editor's title.
func TestPipelinesMeet(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		var posts atomic.Int64
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				posts.Add(1)
			}
			w.WriteHeader(http.StatusOK)
		}))
		defer hook.Close()
		repo := mustRepo(t, 3)
		db := b.NewURL(t)
		home := homeFor(t)
		env := []string{"TIDEMARK_WEBHOOK_SECRET=s3cret"}
		mustOK(t, tm(t, env, "--db", db, "source", "add", repo, "--name", "repo"))
		mustOK(t, tm(t, env, "--db", db, "outbox", "lane", "add", "hooks", "--provider", "webhook", "--setting", "url="+hook.URL, "--min-gap", "1ms"))
		mustOK(t, tm(t, env, "--db", db, "outbox", "channel", "add", "--source", "repo", "--lane", "hooks", "--target", "chat"))
		r := mustOK(t, tm(t, env, "--db", db, "run", "--once"))
		if !strings.Contains(r.stdout, "3 new") {
			t.Fatalf("run --once:\n%s", r.stdout)
		}
		var intents []map[string]any
		out := mustOK(t, tm(t, env, "--db", db, "outbox", "intents", "list", "--json")).stdout
		if err := json.Unmarshal([]byte(out), &intents); err != nil || len(intents) != 3 {
			t.Fatalf("intents after publishing 3 pages: %v\n%s", err, out)
		}
		// run --once delivered what publication drafted.
		if n := posts.Load(); n != 3 {
			t.Fatalf("the webhook received %d posts, want 3\n%s", n, r.stdout)
		}
		if !strings.Contains(r.stdout, "landed 3") {
			t.Fatalf("run --once does not report the delivery:\n%s", r.stdout)
		}
		mustOK(t, tm(t, env, "--db", db, "outbox", "deliver", "--once"))
		if n := posts.Load(); n != 3 {
			t.Fatalf("a second delivery pass posted again: %d posts", n)
		}

		var evs []tidemark.Event
		out = mustOK(t, tm(t, env, "--db", db, "events", "list", "--json")).stdout
		if err := json.Unmarshal([]byte(out), &evs); err != nil || len(evs) != 3 {
			t.Fatalf("events: %v\n%s", err, out)
		}
		r = mustOK(t, tm(t, env, "--db", db, "docs", "put", "pages", evs[0].ID, "--base-version", "0", "--text", "title=A corrected title"))
		if !strings.Contains(r.stderr, "republished page") {
			t.Fatalf("editing a page document did not republish its page:\n%s", r.stderr)
		}
		pages, _ := filepath.Glob(filepath.Join(home, "wiki", "changes", "*.html"))
		found := false
		for _, p := range pages {
			body, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(body), "A corrected title") {
				found = true
			}
		}
		if len(pages) != 3 || !found {
			t.Fatalf("%d pages, corrected title found: %v", len(pages), found)
		}
	})
}
