package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
)

func TestSourceAddChecksGitSources(t *testing.T) {
	repo := mustRepo(t, 2)
	bare := filepath.Join(t.TempDir(), "mirror.git")
	gitIn(t, repo, "clone", "-q", "--bare", repo, bare)
	home := t.TempDir()
	add := func(want int, args ...string) string {
		t.Helper()
		return mustTidemark(t, want, append([]string{"--home", home, "source", "add"}, args...)...)
	}

	// Unknown config keys are refused for every kind, missing branches
	// for git.
	add(tidemark.ExitInvalid, repo, "--config", "brnach=main")
	add(tidemark.ExitInvalid, t.TempDir(), "--kind", "dir", "--config", "branch=main")
	add(tidemark.ExitInvalid, repo, "--config", "branch=nope")
	add(tidemark.ExitInvalid, "file://"+bare, "--config", "branch=nope")

	// A bare repository is a local source of its own.
	var src tidemark.Source
	if err := json.Unmarshal([]byte(add(0, bare, "--json")), &src); err != nil {
		t.Fatal(err)
	}
	if src.Kind != "git" || src.Location != bare || src.Name != "mirror" {
		t.Fatalf("bare repository added as %+v", src)
	}
	mustTidemark(t, 0, "--home", home, "run", "--once")

	// user@host:path is accepted as git, and kept to the address guard.
	add(tidemark.ExitInvalid, "git@127.0.0.1:o/r.git")
}

func TestSourceSkipToIsValidated(t *testing.T) {
	repo := mustRepo(t, 3)
	home := t.TempDir()
	mustTidemark(t, 0, "--home", home, "source", "add", repo, "--name", "r")
	first := gitIn(t, repo, "rev-list", "--max-parents=0", "HEAD")
	gitIn(t, repo, "checkout", "-q", "-b", "side")
	gitIn(t, repo, "commit", "-q", "--allow-empty", "-m", "off the branch")
	side := gitIn(t, repo, "rev-parse", "HEAD")
	gitIn(t, repo, "checkout", "-q", "main")

	for _, bad := range []string{"nope", side, strings.Repeat("0", 40)} {
		mustTidemark(t, tidemark.ExitInvalid, "--home", home, "source", "skip", "r", "--to", bad)
	}
	out := mustTidemark(t, 0, "--home", home, "source", "skip", "r", "--to", first[:10])
	if !strings.Contains(out, first) {
		t.Fatalf("skip to a short hash moved the cursor to: %s", out)
	}
}

func TestSourceAddResolvesADirRootThatIsALink(t *testing.T) {
	resolved, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(resolved, link); err != nil {
		t.Fatal(err)
	}
	var src tidemark.Source
	out := mustTidemark(t, 0, "--home", t.TempDir(), "source", "add", link, "--kind", "dir", "--json")
	if err := json.Unmarshal([]byte(out), &src); err != nil || src.Location != resolved {
		t.Fatalf("added %+v (%v), want location %s", src, err, resolved)
	}
}

// A git source that follows a branch the upstream renamed is moved to the
// new name with source set --config branch=NEW: the cursor stays, so the
// next run reads only the commits after it, each once.
func TestSourceSetChangesAGitBranch(t *testing.T) {
	repo := mustRepo(t, 3)
	home := t.TempDir()
	tm := func(want int, args ...string) string {
		t.Helper()
		return mustTidemark(t, want, append([]string{"--home", home}, args...)...)
	}
	tmErr := func(want int, args ...string) string { // the error said
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(append([]string{"--home", home}, args...), &out, &errb); code != want {
			t.Fatalf("tidemark %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errb.String())
		}
		return errb.String()
	}
	tm(0, "source", "add", repo, "--name", "r", "--config", "branch=main")
	tm(0, "source", "run", "r")
	gitIn(t, repo, "branch", "-m", "main", "trunk")
	gitIn(t, repo, "commit", "-q", "--allow-empty", "-m", "after the rename")
	tm(tidemark.ExitUnavailable, "source", "run", "r") // branch main not found

	tm(tidemark.ExitInvalid, "source", "set", "r", "--config", "branch=nope")
	tm(tidemark.ExitInvalid, "source", "set", "r", "--config", "brnch=trunk")
	// The confirmation says the change it made, not only the settings it
	// did not touch.
	if out := tm(0, "source", "set", "r", "--config", "branch=trunk"); !strings.HasPrefix(out, "r: config branch=trunk; ") {
		t.Fatalf("source set --config branch=trunk says %q, want it to name the change", out)
	}
	out := tm(0, "source", "run", "r", "--json")
	var reps []struct {
		EventsNew int `json:"events_new"`
	}
	if err := json.Unmarshal([]byte(out), &reps); err != nil || len(reps) != 1 || reps[0].EventsNew != 1 {
		t.Fatalf("run after set branch=trunk: %s (%v), want one run with the one new commit", out, err)
	}
	if show := tm(0, "source", "show", "r"); !strings.Contains(show, `config branch: "main" -> "trunk"`) {
		t.Fatalf("source show does not list the change:\n%s", show)
	}
	// The source is keyed by the branch it follows now: the old branch is
	// free for a new source, the new one is r's.
	gitIn(t, repo, "branch", "main", "trunk~1")
	tm(0, "source", "add", repo, "--name", "r-main", "--config", "branch=main")
	if out := tmErr(tidemark.ExitConflict, "source", "add", repo, "--name", "r-trunk", "--config", "branch=trunk"); !strings.Contains(out, `"r"`) {
		t.Fatalf("an add of the branch r follows now does not name r: %s", out)
	}
	// Another source on the same repository and branch: a duplicate, refused.
	gitIn(t, repo, "branch", "other")
	tm(0, "source", "add", repo, "--name", "r2", "--config", "branch=other")
	if out := tmErr(tidemark.ExitConflict, "source", "set", "r", "--config", "branch=other"); !strings.Contains(out, `"r2"`) {
		t.Fatalf("a set to the branch r2 follows does not name r2: %s", out)
	}
	var r tidemark.Source
	if err := json.Unmarshal([]byte(tm(0, "source", "show", "r", "--json")), &r); err != nil || r.Config["branch"] != "trunk" {
		t.Fatalf("r after a refused set: %+v (%v), want branch trunk", r.Config, err)
	}
	// A dir source's include selects what its manifest stands for: not set in place.
	dir := t.TempDir()
	tm(0, "source", "add", dir, "--kind", "dir", "--name", "d")
	tm(tidemark.ExitInvalid, "source", "set", "d", "--config", "include=*.md")
}
