package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
)

// Two workers share one database, each with its own home (and so its own
// default store): the second refuses at start with the fix, and neither its
// run nor its sweep writes a page into its store.
func TestWorkersOnTwoStoresRefuseAtStart(t *testing.T) {
	t.Setenv("TIDEMARK_SUMMARIZER", "")
	t.Setenv("TIDEMARK_STORE", "")
	repo := mustGitRepo(t)
	db := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	homeA, homeB := t.TempDir(), t.TempDir()
	if out, code := runCLI(t, "--home", homeA, "--db", db, "run", "--once", "--track", repo); code != 0 {
		t.Fatalf("worker A: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"run", "--once"}, {"publish"}, {"publish", "sweep"}} {
		out, code := runCLI(t, append([]string{"--home", homeB, "--db", db}, args...)...)
		if code != tidemark.ExitInvalid || !strings.Contains(out, "--store s3://") || !strings.Contains(out, filepath.Join(homeA, "wiki")) {
			t.Fatalf("worker B %v: exit %d, want %d naming the fix and the wiki's store\n%s", args, code, tidemark.ExitInvalid, out)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(homeB, "wiki", "*", "*.html")); len(matches) != 0 {
		t.Fatalf("the refused worker wrote pages into its store: %v", matches)
	}
	// Worker A goes on, converged: its sweep republishes nothing.
	out, code := runCLI(t, "--home", homeA, "--db", db, "publish", "sweep")
	if code != 0 || !strings.Contains(out, "0 republished") {
		t.Fatalf("worker A sweep: exit %d\n%s", code, out)
	}
	// Worker B given the wiki's store works.
	out, code = runCLI(t, "--home", homeB, "--db", db, "--store", filepath.Join(homeA, "wiki"), "publish", "sweep")
	if code != 0 || !strings.Contains(out, "0 republished") {
		t.Fatalf("worker B on the shared store: exit %d\n%s", code, out)
	}
}
