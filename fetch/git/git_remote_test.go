package git_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/git"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func mustCommitFile(tb testing.TB, work, file, msg string) {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(work, file), []byte(msg+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	mustGit(tb, work, "add", file)
	mustGit(tb, work, "commit", "-q", "-m", msg)
}

func TestRemoteRepositoryAndBranch(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		tmp := t.TempDir()
		work, bare := filepath.Join(tmp, "work"), filepath.Join(tmp, "remote.git")
		mustGit(t, tmp, "init", "-q", "-b", "main", work)
		mustCommitFile(t, work, "a.txt", "on main")
		mustGit(t, work, "checkout", "-q", "-b", "dev")
		mustCommitFile(t, work, "b.txt", "on dev 1")
		mustGit(t, tmp, "clone", "-q", "--bare", work, bare)

		f := &git.Fetcher{CacheDir: filepath.Join(tmp, "cache")}
		h := fetchtest.MustHarness(t, b, "git", "file://"+bare, map[string]string{git.ConfigBranch: "dev"}, f)
		rep := h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsNew != 2 {
			t.Fatalf("first run on dev: %+v", rep)
		}
		h.MustRun(t, tidemark.OutcomeEmpty)

		// A new commit on dev reaches the remote; main moves too but is not
		// followed.
		mustCommitFile(t, work, "c.txt", "on dev 2")
		mustGit(t, work, "push", "-q", bare, "dev")
		mustGit(t, work, "checkout", "-q", "main")
		mustCommitFile(t, work, "d.txt", "on main 2")
		mustGit(t, work, "push", "-q", bare, "main")
		rep = h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsNew != 1 {
			t.Fatalf("second run: %+v", rep)
		}
		titles := map[string]bool{}
		for _, e := range h.Events(t) {
			titles[e.Title] = true
		}
		if !titles["on dev 2"] || titles["on main 2"] {
			t.Fatalf("events: %v", titles)
		}

		// The remote disappears: unreachable, cursor unmoved.
		cur := h.Current(t).Cursor
		if err := os.Rename(bare, bare+".gone"); err != nil {
			t.Fatal(err)
		}
		h.MustRun(t, tidemark.OutcomeUnreachable)
		if h.Current(t).Cursor != cur {
			t.Fatal("cursor moved on an unreachable remote")
		}
	})
}

func TestRemoteFailures(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	tmp := t.TempDir()
	work, bare := filepath.Join(tmp, "work"), filepath.Join(tmp, "remote.git")
	mustGit(t, tmp, "init", "-q", "-b", "main", work)
	mustCommitFile(t, work, "a.txt", "one")
	mustGit(t, tmp, "clone", "-q", "--bare", work, bare)
	f := &git.Fetcher{CacheDir: filepath.Join(tmp, "cache")}
	be := sqltest.Backends()[0]

	h := fetchtest.MustHarness(t, be, "git", "file://"+filepath.Join(tmp, "nowhere.git"), nil, f)
	h.MustRun(t, tidemark.OutcomeUnreachable)

	h = fetchtest.MustHarness(t, be, "git", "file://"+bare, map[string]string{git.ConfigBranch: "nope"}, f)
	h.MustRun(t, tidemark.OutcomeInvalid)

	// ext:: runs commands; it is never allowed.
	h = fetchtest.MustHarness(t, be, "git", "ext::sh -c touch% "+filepath.Join(tmp, "pwned"), nil, f)
	h.Run(t)
	if _, err := os.Stat(filepath.Join(tmp, "pwned")); err == nil {
		t.Fatal("ext:: transport ran a command")
	}

	for loc, want := range map[string]bool{"https://example.org/r.git": true, "git@example.org:o/r.git": true, "/srv/repo": false, "./repo": false, "C:/x": false} {
		if git.IsRemote(loc) != want {
			t.Errorf("IsRemote(%q) = %v", loc, !want)
		}
	}
}

// What git said is said once in a failure: each of its phrases (the parts
// of the message between ": " and line breaks) occurs once, for a local
// repository and for a remote, for a fetch and for the check made when a
// source is added.
func TestFailuresSayWhatGitSaidOnce(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	ctx := context.Background()
	remote, _ := mustDumbHTTPRemote(t)
	notRepo := t.TempDir()
	for _, tc := range []struct {
		name string
		src  tidemark.Source
	}{
		{"local, not a repository", tidemark.Source{Location: notRepo}},
		{"local, unknown branch", tidemark.Source{Location: mustRepo(t, 1), Config: map[string]string{git.ConfigBranch: "nope"}}},
		{"remote, not found", tidemark.Source{Location: strings.TrimSuffix(remote, "/x.git") + "/missing.git", AllowPrivate: true}},
		{"remote, not a repository", tidemark.Source{Location: "file://" + notRepo}},
		{"remote, unknown branch", tidemark.Source{Location: remote, AllowPrivate: true, Config: map[string]string{git.ConfigBranch: "nope"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.src.Name, tc.src.Kind = "r", "git"
			f := &git.Fetcher{CacheDir: t.TempDir()}
			_, fetchErr := f.Fetch(ctx, tc.src, "")
			for what, err := range map[string]error{"fetch": fetchErr, "check": f.Check(ctx, tc.src)} {
				if err == nil {
					if what == "fetch" {
						t.Fatalf("%s succeeded", what)
					}
					continue // a local repository is checked only for a branch
				}
				if p := repeatedPhrase(err.Error()); p != "" {
					t.Errorf("%s: %q is said twice in\n%v", what, p, err)
				}
			}
		})
	}
}

// repeatedPhrase returns a phrase of msg that occurs in it twice, or "".
// Short phrases ("fatal", "git") are not counted.
func repeatedPhrase(msg string) string {
	seen := map[string]bool{}
	for _, line := range strings.Split(msg, "\n") {
		for _, p := range strings.Split(line, ": ") {
			p = strings.TrimSpace(p)
			if len(p) < 12 {
				continue
			}
			if seen[p] {
				return p
			}
			seen[p] = true
		}
	}
	return ""
}

// A remote that renames its default branch (master -> main, the old one
// deleted) is followed by a source that follows HEAD: the mirror's HEAD
// moves with the remote's, the run says so, and only the new commit is
// read.
func TestRemoteHeadMoves(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	ctx := context.Background()
	tmp := t.TempDir()
	work, bare := filepath.Join(tmp, "work"), filepath.Join(tmp, "remote.git")
	mustGit(t, tmp, "init", "-q", "-b", "master", work)
	for i := 0; i < 3; i++ {
		mustCommit(t, work, i)
	}
	mustGit(t, tmp, "clone", "-q", "--bare", work, bare)
	f := &git.Fetcher{CacheDir: filepath.Join(tmp, "cache")}
	s := tidemark.Source{Name: "r", Kind: "git", Location: "file://" + bare}
	res, err := f.Fetch(ctx, s, "")
	if err != nil || len(res.Items) != 3 || len(res.Notes) != 0 {
		t.Fatalf("first fetch: %d items, notes %q, %v", len(res.Items), res.Notes, err)
	}
	cursor := res.Cursor

	// Upstream renames master to main, adds a commit, deletes master.
	mustGit(t, work, "branch", "-m", "master", "main")
	mustCommit(t, work, 3)
	mustGit(t, work, "push", "-q", bare, "main")
	mustGit(t, bare, "symbolic-ref", "HEAD", "refs/heads/main")
	mustGit(t, work, "push", "-q", bare, "--delete", "master")

	res, err = f.Fetch(ctx, s, cursor)
	if err != nil {
		t.Fatalf("fetch after the rename: %v", err)
	}
	if len(res.Items) != 1 || res.Items[0].Title != "commit 3" {
		t.Fatalf("after the rename: %d items, want only the new commit", len(res.Items))
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "refs/heads/master") || !strings.Contains(res.Notes[0], "refs/heads/main") {
		t.Fatalf("notes %q: want one saying HEAD moved from master to main", res.Notes)
	}
	head, err := f.Head(ctx, s)
	if err != nil || head != mustGit(t, bare, "rev-parse", "main") {
		t.Fatalf("Head after the rename: %q, %v", head, err)
	}
	// Said once: the next fetch finds nothing moved.
	if res, err = f.Fetch(ctx, s, res.Cursor); err != nil || len(res.Items) != 0 || len(res.Notes) != 0 {
		t.Fatalf("third fetch: %d items, notes %q, %v", len(res.Items), res.Notes, err)
	}

	// HEAD moves to another branch that still has the old one beside it:
	// followed too (a source that names its branch is not touched).
	mustGit(t, work, "checkout", "-q", "-b", "next")
	mustCommit(t, work, 4)
	mustGit(t, work, "push", "-q", bare, "next")
	mustGit(t, bare, "symbolic-ref", "HEAD", "refs/heads/next")
	named := s
	named.Config = map[string]string{git.ConfigBranch: "main"}
	if res, err := f.Fetch(ctx, named, res.Cursor); err != nil || len(res.Items) != 0 || len(res.Notes) != 0 {
		t.Fatalf("branch=main after HEAD moved to next: %d items, notes %q, %v", len(res.Items), res.Notes, err)
	}
	res, err = f.Fetch(ctx, s, res.Cursor)
	if err != nil || len(res.Items) != 1 || res.Items[0].Title != "commit 4" || len(res.Notes) != 1 {
		t.Fatalf("HEAD -> next: %d items, notes %q, %v", len(res.Items), res.Notes, err)
	}
}
