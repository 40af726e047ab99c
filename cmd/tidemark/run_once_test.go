package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
)

// run --once exits 5 when a source failed, names it, and says that what
// succeeded was kept; the sources that succeeded did settle.
func TestRunOnceFailedSourceExits5(t *testing.T) {
	t.Setenv(AllowPrivateEnv, "1")
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	srv := newBlog(t)
	var down atomic.Bool
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer broken.Close()
	home := t.TempDir()
	mustTidemark(t, 0, "--home", home, "source", "add", srv.URL+"/blog/rss.xml", "--name", "good")
	mustTidemark(t, 0, "--home", home, "source", "add", broken.URL+"/blog/rss.xml", "--name", "flaky")
	down.Store(true)

	out, code := runCLI(t, "--home", home, "run", "--once")
	if code != 5 {
		t.Fatalf("run --once: exit %d, want 5\n%s", code, out)
	}
	for _, want := range []string{"1 of 2 sources failed (flaky unreachable)", "What succeeded is kept", "run the same command again"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if evs := mustTidemark(t, 0, "--home", home, "events", "list", "--source", "good"); !strings.Contains(evs, "Post one") {
		t.Errorf("the good source's events were not kept:\n%s", evs)
	}

	// Once nothing fails, the pass exits 0 again.
	down.Store(false)
	mustTidemark(t, 0, "--home", home, "source", "retry", "flaky")
	if out, code := runCLI(t, "--home", home, "run", "--once", "--json"); code != 0 {
		t.Fatalf("run --once after recovery: exit %d\n%s", code, out)
	}
}

// A source held by a live holder elsewhere is passed over by run --once
// (not a failure of this pass), with a hint naming --holder and the lease's
// end.
func TestRunOnceHeldSourceSuggestsHolder(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(home, "tidemark.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := db.Ingest().AddSource(ctx, ingest.NewSource{Name: "s", Kind: "git", Location: t.TempDir(), Interval: time.Minute, RetryBudget: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest().Claim(ctx, src.ID, "elsewhere:1", time.Hour); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out := mustTidemark(t, 0, "--home", home, "run", "--once")
	if !strings.Contains(out, "not run: source s: held by elsewhere:1 until") || !strings.Contains(out, "--holder elsewhere:1") {
		t.Fatalf("no hint:\n%s", out)
	}
}
