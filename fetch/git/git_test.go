package git_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/dir"
	"github.com/tidemark/tidemark/fetch/git"
)

// dir2Key is how a dir source keys a file name, for the git evidence's.
func dir2Key(name string) string { return dir.Key(name) }

// mustRepo creates a repository with n commits and returns its path.
func mustRepo(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	mustGit(tb, dir, "init", "-q", "-b", "main")
	for i := 0; i < n; i++ {
		mustCommit(tb, dir, i)
	}
	return dir
}

func mustCommit(tb testing.TB, dir string, i int) {
	tb.Helper()
	name := fmt.Sprintf("f%d.txt", i)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("line\n", i+1)), 0o644); err != nil {
		tb.Fatal(err)
	}
	mustGit(tb, dir, "add", name)
	mustGit(tb, dir, "commit", "-q", "-m", fmt.Sprintf("commit %d\n\nbody of %d", i, i))
}

func mustGit(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func src(dir string) tidemark.Source {
	return tidemark.Source{Name: "repo", Kind: "git", Location: dir}
}

func TestFetchSinceCursor(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 3)
	f := &git.Fetcher{}
	res, err := f.Fetch(ctx, src(dir), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 3 || res.Cursor != mustGit(t, dir, "rev-parse", "HEAD") {
		t.Fatalf("first fetch: %d items, cursor %s", len(res.Items), res.Cursor)
	}
	if res.Items[0].Title != "commit 0" || res.Items[2].Title != "commit 2" {
		t.Fatalf("items out of order: %q … %q", res.Items[0].Title, res.Items[2].Title)
	}
	ev := string(res.Items[1].Evidence)
	for _, want := range []string{"commit " + res.Items[1].Key, "author T <t@example.com> 2026-01-02T03:04:05Z", "    body of 1", "1 files changed, 2 insertions(+), 0 deletions(-)", "2\t0\tf1.txt"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	again, err := f.Fetch(ctx, src(dir), res.Cursor)
	if err != nil || len(again.Items) != 0 || again.Cursor != res.Cursor {
		t.Fatalf("fetch at head: %d items, cursor %s, %v", len(again.Items), again.Cursor, err)
	}
	mustCommit(t, dir, 3)
	next, err := f.Fetch(ctx, src(dir), res.Cursor)
	if err != nil || len(next.Items) != 1 || next.Items[0].Title != "commit 3" {
		t.Fatalf("after one more commit: %+v %v", next.Items, err)
	}
	// The same commit read twice freezes to the same evidence.
	re, _ := f.Fetch(ctx, src(dir), "")
	if re.Items[1].EvidenceHash() != res.Items[1].EvidenceHash() {
		t.Fatal("the same commit froze to two evidence hashes")
	}
}

func TestFetchStopsAtLimitWithoutSkipping(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 5)
	f := &git.Fetcher{MaxCommits: 2}
	var seen []string
	cursor := ""
	// Only a full window with commits beyond it says there is more.
	wantMore := []bool{true, true, false, false}
	for i := 0; i < 4; i++ {
		res, err := f.Fetch(ctx, src(dir), cursor)
		if err != nil {
			t.Fatal(err)
		}
		if res.Declared > len(res.Items) {
			t.Fatalf("declared %d, admitted %d", res.Declared, len(res.Items))
		}
		if res.More != wantMore[i] {
			t.Fatalf("fetch %d: more = %v, want %v", i, res.More, wantMore[i])
		}
		for _, it := range res.Items {
			seen = append(seen, it.Title)
		}
		cursor = res.Cursor
	}
	if got := strings.Join(seen, ","); got != "commit 0,commit 1,commit 2,commit 3,commit 4" {
		t.Fatalf("read in pages of 2: %s", got)
	}
}

func TestFetchFailuresAreClassified(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 1)
	f := &git.Fetcher{}
	cases := []struct {
		name   string
		src    tidemark.Source
		cursor string
		want   tidemark.Outcome
	}{

		{"cursor not in history", src(dir), strings.Repeat("ab", 20), tidemark.OutcomeInvalid},
		{"unknown branch", tidemark.Source{Location: dir, Config: map[string]string{git.ConfigBranch: "nope"}}, "", tidemark.OutcomeInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.Fetch(ctx, tc.src, tc.cursor)
			var fe *tidemark.FetchError
			if !errors.As(err, &fe) || fe.Outcome != tc.want {
				t.Fatalf("got %v, want a %s FetchError", err, tc.want)
			}
		})
	}
}

// A local repository this worker cannot see may be another worker's (a
// shared volume): the fetch says so, and the run spends no budget.
func TestMissingLocalRepositoryCannotBeServedHere(t *testing.T) {
	_, err := (&git.Fetcher{}).Fetch(context.Background(), src(filepath.Join(mustRepo(t, 1), "nope")), "")
	if !errors.Is(err, tidemark.ErrCannotServe) {
		t.Fatalf("got %v, want ErrCannotServe", err)
	}
}

// A worker without git cannot serve a git source, and says so.
func TestWorkerWithoutGitCannotServe(t *testing.T) {
	f := &git.Fetcher{Git: filepath.Join(t.TempDir(), "no-git-here")}
	_, err := f.Fetch(context.Background(), src(mustRepo(t, 1)), "")
	if !errors.Is(err, tidemark.ErrCannotServe) {
		t.Fatalf("got %v, want ErrCannotServe", err)
	}
}

func TestBranchSelection(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 1)
	mustGit(t, dir, "checkout", "-q", "-b", "side")
	mustCommit(t, dir, 1)
	mustGit(t, dir, "checkout", "-q", "main")
	s := src(dir)
	s.Config = map[string]string{git.ConfigBranch: "side"}
	res, err := (&git.Fetcher{}).Fetch(ctx, s, "")
	if err != nil || len(res.Items) != 2 || res.Items[1].Title != "commit 1" {
		t.Fatalf("branch side: %+v %v", res.Items, err)
	}
}

// A rewritten history (the cursor is no longer an ancestor of the branch
// head) is invalid, naming both commits; nothing is read past it.
func TestRewrittenHistoryIsInvalidNamingBothCommits(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 3)
	f := &git.Fetcher{}
	res, err := f.Fetch(ctx, src(dir), "")
	if err != nil {
		t.Fatal(err)
	}
	cursor := res.Cursor
	for name, rewrite := range map[string]func(){
		"amended":    func() { mustGit(t, dir, "commit", "-q", "--amend", "-m", "rewritten") },
		"reset back": func() { mustGit(t, dir, "reset", "-q", "--hard", "HEAD~1") },
		"new history": func() {
			mustGit(t, dir, "checkout", "-q", "--orphan", "other")
			mustCommit(t, dir, 9)
			mustGit(t, dir, "branch", "-f", "main", "other")
		},
	} {
		t.Run(name, func(t *testing.T) {
			mustGit(t, dir, "checkout", "-q", "-f", "main")
			mustGit(t, dir, "reset", "-q", "--hard", cursor)
			rewrite()
			mustGit(t, dir, "checkout", "-q", "-f", "main")
			head := mustGit(t, dir, "rev-parse", "main")
			_, err := f.Fetch(ctx, src(dir), cursor)
			var fe *tidemark.FetchError
			if !errors.As(err, &fe) || fe.Outcome != tidemark.OutcomeInvalid {
				t.Fatalf("got %v, want invalid", err)
			}
			if !strings.Contains(fe.Reason, cursor[:12]) || !strings.Contains(fe.Reason, head[:12]) {
				t.Fatalf("reason %q does not name cursor %.12s and head %.12s", fe.Reason, cursor, head)
			}
		})
	}
}

func TestLocalRepositoryAcceptsWorkTreesAndBareRepositories(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 1)
	bare := filepath.Join(t.TempDir(), "b.git")
	mustGit(t, dir, "clone", "-q", "--bare", dir, bare)
	f := &git.Fetcher{}
	if got, err := f.LocalRepository(ctx, filepath.Join(dir, ".")); err != nil || got != mustGit(t, dir, "rev-parse", "--show-toplevel") {
		t.Fatalf("work tree: %q %v", got, err)
	}
	got, err := f.LocalRepository(ctx, bare)
	if err != nil || got != bare {
		t.Fatalf("bare: %q %v", got, err)
	}
	res, err := f.Fetch(ctx, src(got), "")
	if err != nil || len(res.Items) != 1 {
		t.Fatalf("fetch from bare: %+v %v", res, err)
	}
	if _, err := f.LocalRepository(ctx, t.TempDir()); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("not a repository: %v", err)
	}
}

// A path that does not exist is refused as one that does not exist, not as
// a directory that is no repository; one that exists keeps that message.
func TestLocalRepositorySaysAMissingPathDoesNotExist(t *testing.T) {
	ctx := context.Background()
	f := &git.Fetcher{}
	missing := filepath.Join(t.TempDir(), "gone")
	for path, want := range map[string]string{
		missing:                          "does not exist",
		filepath.Join(missing, "deeper"): "does not exist",
		t.TempDir():                      "not a git repository",
	} {
		_, err := f.LocalRepository(ctx, path)
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want invalid saying %q", path, err, want)
		}
		if want == "does not exist" && strings.Contains(err.Error(), "not a git repository") {
			t.Errorf("%s: %v also says it is not a repository", path, err)
		}
	}
}

func TestCheckRefusesMissingBranches(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 1)
	bare := filepath.Join(t.TempDir(), "b.git")
	mustGit(t, dir, "clone", "-q", "--bare", dir, bare)
	f := &git.Fetcher{CacheDir: t.TempDir()}
	for _, loc := range []string{dir, "file://" + bare} {
		if err := f.Check(ctx, tidemark.Source{Location: loc, Config: map[string]string{git.ConfigBranch: "main"}}); err != nil {
			t.Errorf("%s main: %v", loc, err)
		}
		if err := f.Check(ctx, tidemark.Source{Location: loc, Config: map[string]string{git.ConfigBranch: "nope"}}); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%s nope: %v, want invalid", loc, err)
		}
	}
}

func TestResolveCursorWantsACommitOfTheBranch(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 3)
	first := mustGit(t, dir, "rev-list", "--max-parents=0", "HEAD")
	mustGit(t, dir, "checkout", "-q", "-b", "side")
	mustCommit(t, dir, 7)
	side := mustGit(t, dir, "rev-parse", "HEAD")
	mustGit(t, dir, "checkout", "-q", "main")
	f := &git.Fetcher{}
	s := src(dir)
	s.Config = map[string]string{git.ConfigBranch: "main"}
	if got, err := f.ResolveCursor(ctx, s, first[:10]); err != nil || got != first {
		t.Fatalf("short hash of a main commit: %q %v", got, err)
	}
	for _, bad := range []string{side, "nope", strings.Repeat("ab", 20), "--all"} {
		if _, err := f.ResolveCursor(ctx, s, bad); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("--to %s: %v, want invalid", bad, err)
		}
	}
}

func TestCheckAcceptsARepositoryWithoutCommitsUnlessABranchIsNamed(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 0)
	f := &git.Fetcher{}
	if err := f.Check(ctx, src(dir)); err != nil {
		t.Fatalf("no commits yet, no branch named: %v", err)
	}
	s := src(dir)
	s.Config = map[string]string{git.ConfigBranch: "main"}
	if err := f.Check(ctx, s); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("branch main named, not there yet: %v", err)
	}
}

// A skip moves a cursor forward only: while the cursor's commit is on the
// branch, a target that does not descend from it (an ancestor, or a commit
// a merge brought in beside it) would read commits again and is refused,
// saying why. A cursor no longer on the branch (rewritten history, its
// commit gone or left behind) may move to any commit of the branch.
func TestResolveCursorRefusesMovingBack(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 3)
	first := mustGit(t, dir, "rev-list", "--max-parents=0", "HEAD")
	second := mustGit(t, dir, "rev-parse", "HEAD~1")
	third := mustGit(t, dir, "rev-parse", "HEAD")
	mustGit(t, dir, "checkout", "-q", "-b", "side", first)
	mustCommit(t, dir, 7)
	side := mustGit(t, dir, "rev-parse", "HEAD")
	mustGit(t, dir, "checkout", "-q", "main")
	mustGit(t, dir, "merge", "-q", "--no-ff", "-m", "merge side", "side")
	head := mustGit(t, dir, "rev-parse", "HEAD")
	f := &git.Fetcher{}
	at := func(cursor string) tidemark.Source { s := src(dir); s.Cursor = cursor; return s }

	for _, tc := range []struct{ cursor, to, why, then string }{
		{head, second, "an ancestor", "nothing ahead to skip"},
		{third, first[:10], "an ancestor, by a short hash", "or none (no to) to skip to the head " + head[:12]},
		{third, side, "beside the cursor, merged in later", "name a commit after the cursor"},
	} {
		_, err := f.ResolveCursor(ctx, at(tc.cursor), tc.to)
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "does not descend from the cursor") ||
			!strings.Contains(err.Error(), tc.cursor[:12]) || !strings.Contains(err.Error(), tc.then) {
			t.Errorf("cursor %.12s --to %s (%s): %v, want invalid naming the cursor and %q", tc.cursor, tc.to, tc.why, err, tc.then)
		}
	}
	for _, tc := range []struct{ cursor, to, want string }{
		{"", first, first},
		{second, head, head},
		{second, third[:10], third},
		{strings.Repeat("ab", 20), second, second}, // the cursor's commit is gone
	} {
		if got, err := f.ResolveCursor(ctx, at(tc.cursor), tc.to); err != nil || got != tc.want {
			t.Errorf("cursor %.12s --to %s: %q %v, want %.12s", tc.cursor, tc.to, got, err, tc.want)
		}
	}

	// Rewritten history: the old head's commit is still in the repository
	// but no longer on the branch; skipping to the new head is what skip
	// is for.
	mustGit(t, dir, "reset", "-q", "--hard", "HEAD~1")
	mustCommit(t, dir, 8)
	newHead := mustGit(t, dir, "rev-parse", "HEAD")
	if got, err := f.ResolveCursor(ctx, at(head), newHead); err != nil || got != newHead {
		t.Fatalf("rewritten history: %q %v", got, err)
	}
}

func TestDescribeRangeCountsCommits(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 3)
	first := mustGit(t, dir, "rev-list", "--max-parents=0", "HEAD")
	second := mustGit(t, dir, "rev-parse", "HEAD~1")
	third := mustGit(t, dir, "rev-parse", "HEAD")
	f := &git.Fetcher{}
	for _, tc := range []struct{ from, to, want string }{
		{second, third, "1 commit (" + second + ".." + third + ")"},
		{first, third, "2 commits (" + first + ".." + third + ")"},
		{"", first, "1 commit (" + first + ")"},
	} {
		if got, err := f.DescribeRange(ctx, src(dir), tc.from, tc.to); err != nil || got != tc.want {
			t.Errorf("%.12s..%.12s: %q %v, want %q", tc.from, tc.to, got, err, tc.want)
		}
	}
}

// looseObject moves a loose object out of dir's repository, as a damaged
// repository loses it, and returns a function that puts it back.
func looseObject(tb testing.TB, dir, hash string) func() {
	tb.Helper()
	path := filepath.Join(dir, ".git", "objects", hash[:2], hash[2:])
	saved := filepath.Join(tb.TempDir(), "obj")
	if err := os.Rename(path, saved); err != nil {
		tb.Fatal(err)
	}
	return func() {
		if err := os.Rename(saved, path); err != nil {
			tb.Fatal(err)
		}
	}
}

// wantInvalidSaying checks that err fails the run as invalid with a
// reason that says every one of want and none of never, and no raw git
// command line (its format's control characters).
func wantInvalidSaying(t *testing.T, err error, want []string, never []string) {
	t.Helper()
	o, reason, _ := tidemark.Classify(err)
	if o != tidemark.OutcomeInvalid {
		t.Fatalf("outcome %s (%v), want invalid", o, err)
	}
	for _, w := range want {
		if !strings.Contains(reason, w) {
			t.Errorf("reason %q does not say %q", reason, w)
		}
	}
	for _, n := range append(never, "\x1e", "\x1f", "--format", "--stdin") {
		if strings.Contains(reason, n) {
			t.Errorf("reason %q says %q", reason, n)
		}
	}
}

// A repository that lost an object is damaged, not rewritten: the reason
// says so and what to do, never to skip; once the object is back, the
// commits are read, each once.
func TestDamagedRepositoryIsNotARewrite(t *testing.T) {
	ctx := context.Background()
	f := &git.Fetcher{}

	t.Run("missing commit", func(t *testing.T) {
		dir := mustRepo(t, 1)
		res, err := f.Fetch(ctx, src(dir), "")
		if err != nil {
			t.Fatal(err)
		}
		mustCommit(t, dir, 1)
		mustCommit(t, dir, 2)
		restore := looseObject(t, dir, mustGit(t, dir, "rev-parse", "HEAD~1"))
		_, err = f.Fetch(ctx, src(dir), res.Cursor)
		wantInvalidSaying(t, err, []string{"damaged", dir}, []string{"rewritten", "skip to"})
		restore()
		if res, err = f.Fetch(ctx, src(dir), res.Cursor); err != nil || len(res.Items) != 2 {
			t.Fatalf("after the object is back: %d items, %v", len(res.Items), err)
		}
	})

	t.Run("missing blob", func(t *testing.T) {
		dir := mustRepo(t, 1)
		res, err := f.Fetch(ctx, src(dir), "")
		if err != nil {
			t.Fatal(err)
		}
		mustCommit(t, dir, 1)
		restore := looseObject(t, dir, mustGit(t, dir, "rev-parse", "HEAD:f1.txt"))
		_, err = f.Fetch(ctx, src(dir), res.Cursor)
		wantInvalidSaying(t, err, []string{"damaged", dir}, []string{"rewritten"})
		restore()
		if res, err = f.Fetch(ctx, src(dir), res.Cursor); err != nil || len(res.Items) != 1 {
			t.Fatalf("after the object is back: %d items, %v", len(res.Items), err)
		}
	})

	t.Run("missing cursor commit", func(t *testing.T) {
		dir := mustRepo(t, 2)
		res, err := f.Fetch(ctx, src(dir), "")
		if err != nil {
			t.Fatal(err)
		}
		mustCommit(t, dir, 2)
		restore := looseObject(t, dir, res.Cursor)
		_, err = f.Fetch(ctx, src(dir), res.Cursor)
		wantInvalidSaying(t, err, []string{"missing", fmt.Sprintf("%.12s", res.Cursor), "damaged"}, nil)
		restore()
		if res, err = f.Fetch(ctx, src(dir), res.Cursor); err != nil || len(res.Items) != 1 {
			t.Fatalf("after the object is back: %d items, %v", len(res.Items), err)
		}
	})
}

// A shallow clone whose history no longer reaches the cursor says it is
// shallow and to deepen it, not that the history was rewritten; once
// deepened, the commits between are read, each once.
func TestShallowRepositoryPastTheCursor(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	up, dir := filepath.Join(tmp, "up"), filepath.Join(tmp, "shallow")
	mustGit(t, tmp, "init", "-q", "-b", "main", up)
	for i := 0; i < 5; i++ {
		mustCommit(t, up, i)
	}
	mustGit(t, tmp, "clone", "-q", "--depth", "2", "file://"+up, dir)
	f := &git.Fetcher{}
	res, err := f.Fetch(ctx, src(dir), "")
	if err != nil || len(res.Items) != 2 {
		t.Fatalf("first fetch: %d items, %v", len(res.Items), err)
	}
	for i := 5; i < 9; i++ {
		mustCommit(t, up, i)
	}
	mustGit(t, dir, "fetch", "-q", "--depth", "1", "origin", "main")
	mustGit(t, dir, "reset", "-q", "--hard", "origin/main")
	_, err = f.Fetch(ctx, src(dir), res.Cursor)
	wantInvalidSaying(t, err, []string{"shallow", "--unshallow", dir}, []string{"rewritten history:"})
	mustGit(t, dir, "fetch", "-q", "--unshallow")
	if res, err = f.Fetch(ctx, src(dir), res.Cursor); err != nil || len(res.Items) != 4 {
		t.Fatalf("after --unshallow: %d items, %v", len(res.Items), err)
	}
}

// A HEAD that names a branch with no commit says which branch, not git's
// "Needed a single revision".
func TestHeadOnNoBranch(t *testing.T) {
	dir := mustRepo(t, 0)
	_, err := (&git.Fetcher{}).Fetch(context.Background(), src(dir), "")
	wantInvalidSaying(t, err, []string{"HEAD names refs/heads/main", dir}, []string{"Needed a single revision"})
}

// A local repository this process may not read (no permission on it, or
// on its objects) is our own failure, as a dir root it may not read is:
// error, saying so and how to fix it; never unreachable, never "not
// found" nor "not a git repository". Root reads everything, so this runs
// only as another user.
func TestUnreadableLocalRepository(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may read every file: run as another user")
	}
	ctx := context.Background()
	for _, sub := range []string{"", ".git", ".git/objects"} {
		t.Run("mode 000 on "+sub, func(t *testing.T) {
			dir := mustRepo(t, 1)
			f := &git.Fetcher{}
			res, err := f.Fetch(ctx, src(dir), "")
			if err != nil {
				t.Fatal(err)
			}
			mustCommit(t, dir, 1)
			locked := filepath.Join(dir, sub)
			if err := os.Chmod(locked, 0); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(locked, 0o755)
			_, err = f.Fetch(ctx, src(dir), res.Cursor)
			o, reason, _ := tidemark.Classify(err)
			if o != tidemark.OutcomeError || errors.Is(err, tidemark.ErrCannotServe) {
				t.Fatalf("outcome %s (%v), want error, our own", o, err)
			}
			for _, w := range []string{"permission denied", locked, "make it readable"} {
				if !strings.Contains(reason, w) {
					t.Errorf("reason %q does not say %q", reason, w)
				}
			}
			// source add and --track say the same, not "not a git repository".
			if _, err := f.LocalRepository(ctx, dir); !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "permission denied") {
				t.Errorf("LocalRepository: %v, want it invalid for want of permission", err)
			}
			os.Chmod(locked, 0o755)
			if res, err = f.Fetch(ctx, src(dir), res.Cursor); err != nil || len(res.Items) != 1 {
				t.Fatalf("readable again: %d items, %v", len(res.Items), err)
			}
		})
	}
}

// A skip back, to a commit the cursor already stands for, skips nothing,
// and says so, even where git's own count is misled by commit dates (a
// root dated after its children, two sides read: git lists the root as
// not yet read).
func TestDescribeRangeOfAMoveBack(t *testing.T) {
	ctx := context.Background()
	dir := mustRepo(t, 0)
	var stream strings.Builder
	commit := func(ref, msg string, ts int, mark int, from string) {
		fmt.Fprintf(&stream, "commit %s\n", ref)
		if mark > 0 {
			fmt.Fprintf(&stream, "mark :%d\n", mark)
		}
		fmt.Fprintf(&stream, "committer D <d@example.com> %d +0000\ndata %d\n%s\n", ts, len(msg), msg)
		if from != "" {
			fmt.Fprintf(&stream, "from %s\n", from)
		}
		stream.WriteString("\n")
	}
	commit("refs/heads/main", "root", 2000000000, 1, "")
	for _, side := range []string{"a", "b"} {
		for i := 0; i < 10; i++ {
			from := ""
			if i == 0 {
				from = ":1"
			}
			commit("refs/heads/"+side, fmt.Sprintf("%s%d", side, i), 1600000000, 0, from)
		}
	}
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	cmd.Stdin = strings.NewReader(stream.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
	a, b, root := mustGit(t, dir, "rev-parse", "a"), mustGit(t, dir, "rev-parse", "b"), mustGit(t, dir, "rev-parse", "main")
	cursor := git.Cursor{a, b}.String()
	for _, to := range []string{root, mustGit(t, dir, "rev-parse", "a~3"), a} {
		got, err := (&git.Fetcher{}).DescribeRange(ctx, src(dir), cursor, to)
		if err != nil || !strings.HasPrefix(got, "0 commits") {
			t.Errorf("from %s back to %.12s: %q, %v; want 0 commits", cursor, to, got, err)
		}
	}
}

// Evidence is UTF-8 text as people read it: a UTF-8 file name as it is
// (not git's octal quoting), a name that is not UTF-8 escaped as a dir
// source escapes one (dir.Key), and each run of bytes of a message that are not UTF-8
// as U+FFFD.
func TestEvidenceIsUTF8(t *testing.T) {
	dir := mustRepo(t, 0)
	msg := "raw \xff\xfe bytes\nend\n"
	stream := fmt.Sprintf("commit refs/heads/main\ncommitter D <d@example.com> 1600000000 +0000\ndata %d\n%s\n", len(msg), msg) +
		"M 644 inline caf\xe9.txt\ndata 2\nx\n\n" +
		"M 644 inline café.txt\ndata 2\ny\n\n" +
		"M 644 inline \"tab\\there.txt\"\ndata 2\nz\n\n"
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	cmd.Stdin = strings.NewReader(stream)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v\n%s", err, out)
	}
	res, err := (&git.Fetcher{}).Fetch(context.Background(), src(dir), "")
	if err != nil || len(res.Items) != 1 {
		t.Fatalf("fetch: %d items, %v", len(res.Items), err)
	}
	it := res.Items[0]
	ev := string(it.Evidence)
	if !utf8.ValidString(ev) || !utf8.ValidString(it.Title) {
		t.Fatalf("evidence or title not UTF-8: %q, %q", ev, it.Title)
	}
	for _, want := range []string{"raw \uFFFD bytes", "1\t0\tcafé.txt\n", "1\t0\t" + dir2Key("caf\xe9.txt") + "\n", "1\t0\t\"tab\\there.txt\"\n"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence does not hold %q:\n%s", want, ev)
		}
	}
	if it.Title != "raw \uFFFD bytes" {
		t.Errorf("title %q", it.Title)
	}
}

// A local repository owned by another user is one git refuses to read
// until it is named safe ("detected dubious ownership"): our own failure,
// said as that and how to fix it, never a branch not found. Only root can
// give a repository away, so this runs only as root.
func TestRepositoryOfAnotherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a repository to another user needs root")
	}
	ctx := context.Background()
	dir := mustRepo(t, 1)
	t.Setenv("HOME", t.TempDir()) // no safe.directory of the machine's user
	if err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}); err != nil {
		t.Fatal(err)
	}
	f := &git.Fetcher{}
	_, err := f.Fetch(ctx, src(dir), "")
	o, reason, _ := tidemark.Classify(err)
	if o != tidemark.OutcomeError {
		t.Fatalf("outcome %s (%v), want error, our own", o, err)
	}
	for _, w := range []string{"owned by another user", "safe.directory", dir} {
		if !strings.Contains(reason, w) {
			t.Errorf("reason %q does not say %q", reason, w)
		}
	}
	if strings.Contains(reason, "branch HEAD not found") {
		t.Errorf("reason %q blames a branch", reason)
	}
	// source add and --track say the same, not "not a git repository".
	if _, err := f.LocalRepository(ctx, dir); !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "safe.directory") {
		t.Errorf("LocalRepository: %v, want it invalid, saying how to name it safe", err)
	}
}
