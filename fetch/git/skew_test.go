package git_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/internal/gittest"
)

// Commit dates that run backwards (a rebase, a skewed clock) do not make
// a run read again what an earlier one read: after a line whose dates go
// back in time has been read, a side branch merged into it from one of
// its commits is read, with the merge, and nothing else; in windows of
// any size, each commit once. git's rev-list HEAD ^CURSOR stops walking
// by dates and lists the line's first commits as unread here.
func TestSkewedDatesReadEachCommitOnce(t *testing.T) {
	for _, window := range []int{1, 2, 500} {
		t.Run(fmt.Sprintf("window %d", window), func(t *testing.T) {
			h := gittest.NewHistory(t)
			const at = 1800000000
			line := []int{h.CommitAt(at, "root")}
			for i := 1; i <= 10; i++ {
				line = append(line, h.CommitAt(at-i*1000, fmt.Sprintf("line %d", i), line[i-1]))
			}
			tip := line[len(line)-1]
			dir := h.Write(tip)
			if read := mustDrain(t, dir, "", window); len(read) != 11 {
				t.Fatalf("read %d commits of the line, want 11", len(read))
			}
			side := line[3]
			for i := 1; i <= 3; i++ {
				side = h.CommitAt(at+i*1000, fmt.Sprintf("side %d", i), side)
			}
			h.Extend(dir, h.CommitAt(at+5000, "merge side", tip, side))
			// mustDrain fails a run that reads a commit the cursor stands
			// for, or reads more or fewer than the unread ones.
			if read := mustDrain(t, dir, h.Hash(dir, tip), window); len(read) != 4 {
				t.Fatalf("read %d commits after the merge, want the side's 3 and the merge", len(read))
			}
		})
	}
}

// Seeded random histories whose commit dates are random too (any commit
// may be dated before its parents or after its children), grown in two
// steps and read in small windows: each commit once, only unread commits
// in a window. A failure names its seed.
func TestWindowsReadRandomlyDatedHistoriesOnce(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			h := gittest.NewHistory(t)
			childless := map[int]bool{}
			grow := func(n int) int {
				for i := range n {
					var parents []int
					if h.Len() > 0 && (i < 3 || rng.IntN(20) != 0) {
						k := 1 + min(rng.IntN(8)/5, 2)
						for range k {
							p := max(1, h.Len()-rng.IntN(12))
							if !slices.Contains(parents, p) {
								parents = append(parents, p)
							}
						}
					}
					c := h.CommitAt(1700000000+rng.IntN(1000000), fmt.Sprintf("commit %d", h.Len()+1), parents...)
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
				if len(tips) == 1 {
					return tips[0]
				}
				head := h.CommitAt(1700000000+rng.IntN(1000000), fmt.Sprintf("merge %d tips", len(tips)), tips...)
				clear(childless)
				childless[head] = true
				return head
			}
			window := 1 + rng.IntN(4)
			first := grow(30)
			dir := h.Write(first)
			read := mustDrain(t, dir, "", window)
			cursor := h.Hash(dir, first)
			if n := h.Len(); len(read) != n {
				t.Fatalf("window %d: read %d commits, the history has %d", window, len(read), n)
			}
			n := h.Len()
			h.Extend(dir, grow(30))
			if more := mustDrain(t, dir, cursor, window); len(more) != h.Len()-n {
				t.Fatalf("window %d: read %d commits after growing, %d were added", window, len(more), h.Len()-n)
			}
		})
	}
}
