package git_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/git"
	"github.com/tidemark/tidemark/internal/gittest"
)

// histories are the shapes a window must read through: each builds its
// history and returns the head of main.
var histories = []struct {
	name  string
	build func(h *gittest.History) int
}{
	// The tester's case, at the scale of a small window: both sides of a
	// merge have more unread commits than a run admits.
	{"two sides each beyond the window", func(h *gittest.History) int {
		root := h.Commit("root")
		m := h.Commit("merge a and b", h.Line(root, "a", 8), h.Line(root, "b", 8))
		return h.Line(m, "after", 3)
	}},
	{"several merges", func(h *gittest.History) int {
		c := h.Line(0, "main", 2)
		for i := range 2 {
			c = h.Commit(fmt.Sprintf("merge %d", i), h.Line(c, fmt.Sprintf("x%d", i), 7), h.Line(c, fmt.Sprintf("y%d", i), 6))
			c = h.Line(c, fmt.Sprintf("main after %d", i), 2)
		}
		return c
	}},
	{"octopus", func(h *gittest.History) int {
		root := h.Commit("root")
		m := h.Commit("octopus", h.Line(root, "a", 7), h.Line(root, "b", 3), h.Line(root, "c", 9), h.Line(root, "d", 6))
		return h.Line(m, "after", 2)
	}},
	{"criss-cross", func(h *gittest.History) int {
		root := h.Commit("root")
		a, b := h.Line(root, "a", 5), h.Line(root, "b", 5)
		a2, b2 := h.Commit("a merges b", a, b), h.Commit("b merges a", b, a)
		return h.Commit("merge", h.Line(a2, "a more", 5), h.Line(b2, "b more", 5))
	}},
	{"long parallel branches", func(h *gittest.History) int {
		root := h.Commit("root")
		main, feature := root, root
		for i := range 3 {
			main = h.Line(main, fmt.Sprintf("main %d", i), 6)
			feature = h.Line(feature, fmt.Sprintf("feature %d", i), 6)
			feature = h.Commit(fmt.Sprintf("feature takes main %d", i), feature, main)
		}
		return h.Commit("merge feature", h.Line(main, "main last", 3), feature)
	}},
	{"nested merges", func(h *gittest.History) int {
		root := h.Commit("root")
		a := h.Commit("merge a1 and a2", h.Line(root, "a1", 6), h.Line(root, "a2", 6))
		return h.Commit("merge a and b", h.Line(a, "a", 3), h.Line(root, "b", 9))
	}},
	{"unrelated roots", func(h *gittest.History) int {
		m := h.Commit("merge two histories", h.Line(0, "one", 7), h.Line(0, "two", 7))
		return h.Line(m, "after", 2)
	}},
}

// TestWindowsReadEveryHistoryOnce reads histories with merges (both sides
// beyond the window, several, octopus, criss-cross, long parallel
// branches, nested, unrelated roots) run after run, in windows of 1 and
// up; see mustDrain for what every run must do.
func TestWindowsReadEveryHistoryOnce(t *testing.T) {
	for _, hist := range histories {
		t.Run(hist.name, func(t *testing.T) {
			h := gittest.NewHistory(t)
			dir := h.Write(hist.build(h))
			for _, window := range []int{1, 3, 7} {
				t.Run(fmt.Sprintf("window %d", window), func(t *testing.T) {
					order := mustDrain(t, dir, "", window)
					if len(order) != h.Len() {
						t.Fatalf("read %d commits, the history has %d", len(order), h.Len())
					}
					if window == 7 {
						if again := mustDrain(t, dir, "", window); !slices.Equal(again, order) {
							t.Fatalf("read twice in two orders:\n%v\n%v", order, again)
						}
					}
				})
			}
		})
	}
}

// TestWindowsReadRandomHistoriesOnce reads seeded random histories (merges
// of two and three parents, a few roots, one octopus joining every tip)
// the same way; a failure names its seed, which rebuilds the same history.
func TestWindowsReadRandomHistoriesOnce(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			h := gittest.NewHistory(t)
			childless := map[int]bool{}
			for i := range 40 {
				var parents []int
				if h.Len() > 0 && (i < 3 || rng.IntN(20) != 0) { // now and then another root
					k := 1 + min(rng.IntN(8)/5+rng.IntN(10)/9, 3) // mostly one parent, some merges, few octopus
					for range k {
						p := max(1, h.Len()-rng.IntN(15))
						if !slices.Contains(parents, p) {
							parents = append(parents, p)
						}
					}
				}
				c := h.Commit(fmt.Sprintf("commit %d", i), parents...)
				for _, p := range parents {
					delete(childless, p)
				}
				childless[c] = true
			}
			tips := make([]int, 0, len(childless))
			for c := range childless {
				tips = append(tips, c)
			}
			slices.Sort(tips)
			head := tips[0]
			if len(tips) > 1 {
				head = h.Commit("merge every tip", tips...)
			}
			dir := h.Write(head)
			window := 2 + rng.IntN(5)
			if order := mustDrain(t, dir, "", window); len(order) != h.Len() {
				t.Fatalf("window %d: read %d commits, the history has %d", window, len(order), h.Len())
			}
		})
	}
}

// TestBranchGrowsWhileAWindowIsInsideAMerge: the branch moves on (more
// commits, another merge) while the cursor stands inside a merge's
// sides; the rest is read once, the new commits with it.
func TestBranchGrowsWhileAWindowIsInsideAMerge(t *testing.T) {
	h := gittest.NewHistory(t)
	root := h.Commit("root")
	a, b := h.Line(root, "a", 8), h.Line(root, "b", 8)
	m := h.Commit("merge a and b", a, b)
	dir := h.Write(m)
	ctx := context.Background()
	f := &git.Fetcher{MaxCommits: 5}
	cursor := ""
	for range 2 {
		res, err := f.Fetch(ctx, src(dir), cursor)
		if err != nil || len(res.Items) != 5 || !res.More {
			t.Fatalf("fetch: %d items, more %v, %v", len(res.Items), res.More, err)
		}
		cursor = res.Cursor
	}
	// 10 of 18 read; the branch grows by 9 (another merge of 4 + 4).
	c := h.Line(b, "c", 4)
	head := h.Commit("merge c", h.Line(m, "after", 4), c)
	h.Extend(dir, head)
	if order := mustDrain(t, dir, cursor, 3); len(order) != h.Len()-10 {
		t.Fatalf("read %d commits after the cursor, want %d", len(order), h.Len()-10)
	}
}

// TestACursorOfOneCommitStillReads: a cursor the current release wrote (a
// single commit, possibly one inside a merge's side) is still read, and
// stands for that commit and its ancestors.
func TestACursorOfOneCommitStillReads(t *testing.T) {
	h := gittest.NewHistory(t)
	root := h.Commit("root")
	a := h.Line(root, "a", 8)
	m := h.Commit("merge a and b", a, h.Line(root, "b", 8))
	dir := h.Write(h.Line(m, "after", 3))
	a5 := h.Hash(dir, root+5) // "a 5"
	order := mustDrain(t, dir, a5, 4)
	if want := h.Len() - 6; len(order) != want {
		t.Fatalf("read %d commits after %.12s, want %d", len(order), a5, want)
	}
}

// mustDrain reads the history at dir from cursor to its end, as the runs
// of a source would, a window of commits a run, and returns the commits in
// the order read. After every run it checks that:
//   - every commit is read once, after its parents;
//   - a run reads a full window while unread commits remain (no run is
//     empty, so the runs are ceil(commits/window)), and says More exactly
//     when some remain after it;
//   - the cursor stands for exactly the commits read so far: it never
//     moves back (a commit read would be read again) nor past a commit not
//     read.
func mustDrain(tb testing.TB, dir, cursor string, window int) []string {
	tb.Helper()
	ctx := context.Background()
	// Every commit of main with its parents: a listing without exclusions,
	// which git walks to the end whatever the commits' dates.
	parents := map[string][]string{}
	for _, line := range strings.Split(gittest.Git(tb, dir, "rev-list", "--parents", "main"), "\n") {
		f := strings.Fields(line)
		parents[f[0]] = f[1:]
	}
	// What a cursor has not read: the commits of main that are none of the
	// cursor's commits nor their ancestors, walked here rather than asked
	// of git's rev-list ^cursor, whose walk stops by commit dates and
	// takes read commits for unread ones in a history whose dates run
	// backwards.
	unread := func(cursor string) map[string]bool {
		read := map[string]bool{}
		stack := git.ParseCursor(cursor)
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !read[c] {
				read[c] = true
				stack = append(stack, parents[c]...)
			}
		}
		set := map[string]bool{}
		for c := range parents {
			if !read[c] {
				set[c] = true
			}
		}
		return set
	}

	left := unread(cursor)
	runs := (len(left) + window - 1) / window
	f := &git.Fetcher{MaxCommits: window}
	var order []string
	for run := 1; ; run++ {
		res, err := f.Fetch(ctx, src(dir), cursor)
		if err != nil {
			tb.Fatalf("run %d: %v", run, err)
		}
		if want := min(window, len(left)); len(res.Items) != want || res.Declared != len(res.Items) {
			tb.Fatalf("run %d of window %d read %d commits (declared %d), want %d: %d commits are unread",
				run, window, len(res.Items), res.Declared, want, len(left))
		}
		for _, it := range res.Items {
			if !left[it.Key] {
				tb.Fatalf("run %d read %.12s (%s) again", run, it.Key, it.Title)
			}
			for _, p := range parents[it.Key] {
				if left[p] {
					tb.Fatalf("run %d read %.12s (%s) before its parent %.12s", run, it.Key, it.Title, p)
				}
			}
			delete(left, it.Key)
			order = append(order, it.Key)
		}
		if res.More != (len(left) > 0) {
			tb.Fatalf("run %d says more = %v with %d commits unread", run, res.More, len(left))
		}
		got := unread(res.Cursor)
		var back, past int
		for k := range got {
			if !left[k] {
				back++
			}
		}
		for k := range left {
			if !got[k] {
				past++
			}
		}
		if back > 0 || past > 0 {
			tb.Fatalf("run %d: cursor %q moved back over %d commits read and past %d not read", run, res.Cursor, back, past)
		}
		cursor = res.Cursor
		if !res.More {
			if run != runs {
				tb.Fatalf("read in %d runs of window %d, want %d", run, window, runs)
			}
			break
		}
	}
	res, err := f.Fetch(ctx, src(dir), cursor)
	if err != nil || len(res.Items) != 0 || res.More || res.Cursor != cursor {
		tb.Fatalf("after the last run: %d commits, more %v, cursor %q (was %q), %v", len(res.Items), res.More, res.Cursor, cursor, err)
	}
	return order
}

// A cursor that stands inside the two sides of a merge (a commit of each)
// is one a skip and a skip's description understand: the description
// counts what the cursor has not read; a skip moves it forward only, to a
// commit that descends from each of its commits.
func TestSkipFromACursorInsideAMerge(t *testing.T) {
	ctx := context.Background()
	h := gittest.NewHistory(t)
	root := h.Commit("root")
	a, b := h.Line(root, "a", 8), h.Line(root, "b", 8)
	m := h.Commit("merge a and b", a, b)
	dir := h.Write(h.Line(m, "after", 3))
	head := gittest.Git(t, dir, "rev-parse", "main")
	f := &git.Fetcher{MaxCommits: 5}
	cursor := ""
	for range 2 {
		res, err := f.Fetch(ctx, src(dir), cursor)
		if err != nil {
			t.Fatal(err)
		}
		cursor = res.Cursor
	}
	if n := len(git.ParseCursor(cursor)); n != 2 {
		t.Fatalf("cursor %q after 10 of 21 commits has %d commits, want one on each side", cursor, n)
	}
	if got, err := f.DescribeRange(ctx, src(dir), cursor, head); err != nil || got != "11 commits ("+cursor+".."+head+")" {
		t.Fatalf("describe %q..%.12s: %q %v", cursor, head, got, err)
	}
	at := src(dir)
	at.Cursor = cursor
	for _, to := range []string{h.Hash(dir, a), h.Hash(dir, b), h.Hash(dir, root)} {
		if _, err := f.ResolveCursor(ctx, at, to); !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "does not descend from the cursor's commit") {
			t.Errorf("skip from %q to %.12s: %v, want invalid", cursor, to, err)
		}
	}
	for _, to := range []string{h.Hash(dir, m), head} {
		if got, err := f.ResolveCursor(ctx, at, to[:10]); err != nil || got != to {
			t.Errorf("skip from %q to %.12s: %q %v", cursor, to, got, err)
		}
	}
}

// A history rewritten under a cursor inside a merge (the branch reset to
// one side, so the other side's commit is no longer on it) is invalid,
// naming that commit and the head.
func TestRewriteUnderACursorInsideAMergeIsInvalid(t *testing.T) {
	ctx := context.Background()
	h := gittest.NewHistory(t)
	root := h.Commit("root")
	a, b := h.Line(root, "a", 8), h.Line(root, "b", 8)
	dir := h.Write(h.Commit("merge a and b", a, b))
	f := &git.Fetcher{MaxCommits: 12}
	res, err := f.Fetch(ctx, src(dir), "")
	if err != nil {
		t.Fatal(err)
	}
	read := git.ParseCursor(res.Cursor)
	if len(read) != 2 {
		t.Fatalf("cursor %q after 12 of 18 commits, want one commit on each side", res.Cursor)
	}
	// Reset main to side a: the cursor's commit on side b is no longer
	// on it.
	onA := strings.Fields(gittest.Git(t, dir, "rev-list", h.Hash(dir, a)))
	drop := read[0]
	if slices.Contains(onA, drop) {
		drop = read[1]
	}
	if slices.Contains(onA, drop) {
		t.Fatalf("setup: both commits of cursor %q are on side a", res.Cursor)
	}
	gittest.Git(t, dir, "update-ref", "refs/heads/main", h.Hash(dir, a))
	keep := a
	_, err = f.Fetch(ctx, src(dir), res.Cursor)
	var fe *tidemark.FetchError
	if !errors.As(err, &fe) || fe.Outcome != tidemark.OutcomeInvalid || !strings.Contains(fe.Reason, drop[:12]) || !strings.Contains(fe.Reason, h.Hash(dir, keep)[:12]) {
		t.Fatalf("got %v, want invalid naming %.12s and the head", err, drop)
	}
}

// A cursor is commit hashes only: anything else in it (a stored cursor
// edited by hand, or an option) is refused as invalid, never handed to git
// as an argument on its standard input.
func TestACursorThatIsNotCommitHashesIsInvalid(t *testing.T) {
	ctx := context.Background()
	h := gittest.NewHistory(t)
	root := h.Commit("root")
	dir := h.Write(h.Line(root, "a", 3))
	f := &git.Fetcher{MaxCommits: 12}
	head := strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD"))
	for _, cur := range []string{"--all", head + ",--not", "main", head[:12]} {
		_, err := f.Fetch(ctx, src(dir), cur)
		var fe *tidemark.FetchError
		if !errors.As(err, &fe) || fe.Outcome != tidemark.OutcomeInvalid || !strings.Contains(fe.Reason, "cursor") {
			t.Errorf("cursor %q: %v, want invalid naming the cursor", cur, err)
		}
	}
}
