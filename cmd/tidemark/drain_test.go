package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/gittest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// mustLongRepo makes a repository of n commits in one git fast-import, far
// quicker than n commands.
func mustLongRepo(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	var s bytes.Buffer
	for i := 1; i <= n; i++ {
		msg := fmt.Sprintf("change %d\n", i)
		body := fmt.Sprintf("%d\n", i)
		fmt.Fprintf(&s, "commit refs/heads/main\nmark :%d\ncommitter T <t@example.com> %d +0000\ndata %d\n%s", i, 1700000000+i*60, len(msg), msg)
		if i > 1 {
			fmt.Fprintf(&s, "from :%d\n", i-1)
		}
		fmt.Fprintf(&s, "M 644 inline f%d\ndata %d\n%s\n", i%50, len(body), body)
	}
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	cmd.Stdin = &s
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import: %v\n%s", err, out)
	}
	return dir
}

// TestRunOnceDrainsALongHistory: one `run --once` reads a history longer
// than a run's window to its end and publishes a page for every commit; a
// backlog is not left waiting for the source's interval.
func TestRunOnceDrainsALongHistory(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		const commits = 1201 // three windows of 500
		repo := mustLongRepo(t, commits)
		db := b.NewURL(t)
		r := mustOK(t, tm(t, nil, "--db", db, "run", "--once", "--track", repo))
		for _, want := range []string{
			fmt.Sprintf("%d published now, 0 failed, %d in all", commits, commits),
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("run --once output lacks %q:\n%s", want, r.stdout)
			}
		}
		if n := strings.Count(r.stdout, "500 new"); n != 2 {
			t.Errorf("%d runs of a full window, want 2:\n%s", n, r.stdout)
		}
		src := showSource(t, db, sourceName(repo))
		if head := gitIn(t, repo, "rev-parse", "HEAD"); src.Cursor != head {
			t.Fatalf("cursor %s, want the head %s", src.Cursor, head)
		}
		// Nothing is left: a second run --once has nothing due.
		r = mustOK(t, tm(t, nil, "--db", db, "run", "--once"))
		if !strings.Contains(r.stdout, "no source is due") || !strings.Contains(r.stdout, "0 published now") {
			t.Fatalf("second run --once:\n%s", r.stdout)
		}
	})
}

func sourceName(repo string) string { return filepath.Base(repo) }

// TestSourceRunNow runs one source that is not due, and refuses a paused
// one with a clear error.
func TestSourceRunNow(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		repo := mustRepo(t, 2)
		db := b.NewURL(t)
		mustOK(t, tm(t, nil, "--db", db, "source", "add", repo, "--name", "r", "--interval", "1h"))
		mustOK(t, tm(t, nil, "--db", db, "run", "--once"))
		gitIn(t, repo, "commit", "-q", "--allow-empty", "-m", "later")
		// Not due for an hour, but run now.
		r := mustOK(t, tm(t, nil, "--db", db, "source", "run", "r"))
		if !strings.Contains(r.stdout, "1 new") {
			t.Fatalf("source run:\n%s", r.stdout)
		}
		mustOK(t, tm(t, nil, "--db", db, "source", "pause", "r"))
		r = tm(t, nil, "--db", db, "source", "run", "r")
		if r.code != 4 || !strings.Contains(r.stderr, "paused") {
			t.Fatalf("source run of a paused source: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestRunOnceDrainsAMergeOfTwoLongSides: the sides of a merge each hold
// more commits than a run's window (700 and 700, windows of 500); one `run
// --once` reads every commit once, in ceil(1,402/500) = 3 runs, and leaves
// the cursor at the head.
func TestRunOnceDrainsAMergeOfTwoLongSides(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := gittest.NewHistory(t)
		root := h.Commit("root")
		repo := h.Write(h.Commit("merge a and b", h.Line(root, "a", 700), h.Line(root, "b", 700)))
		const commits = 1402
		db := b.NewURL(t)
		// Few passes: a source that does not drain fails at once, rather
		// than after the default 10,000 runs.
		r := mustOK(t, tm(t, nil, "--db", db, "run", "--once", "--max-passes", "5", "--track", repo))
		if n := strings.Count(r.stdout, "500 new"); n != 2 || !strings.Contains(r.stdout, "402 new") {
			t.Errorf("want runs of 500, 500 and 402 new:\n%s", r.stdout)
		}
		if want := fmt.Sprintf("%d published now, 0 failed, %d in all", commits, commits); !strings.Contains(r.stdout, want) {
			t.Errorf("run --once output lacks %q:\n%s", want, r.stdout)
		}
		src := showSource(t, db, sourceName(repo))
		if head := gitIn(t, repo, "rev-parse", "HEAD"); src.Cursor != head {
			t.Fatalf("cursor %s, want the head %s", src.Cursor, head)
		}
	})
}
