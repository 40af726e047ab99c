package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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
