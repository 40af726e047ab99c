package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A claim whose holder is a process of this host that is no longer running
// is taken over at once, its run recorded lost; a holder that is alive, on
// another host or of a custom identity keeps its claim until the lease
// expires, and the refusal says who holds it until when.
func TestClaimTakesOverGoneHolder(t *testing.T) {
	ctx := context.Background()
	dead := map[int]bool{41: true}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		env := sqltest.NewEnv(3)
		db, err := sqlstore.Open(ctx, b.NewURL(t), sqlstore.Options{Clock: env.Clock, IDs: env.IDs,
			Liveness: &ingest.Liveness{Host: "box", Alive: func(pid int) bool { return !dead[pid] }}})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		st := db.Ingest()
		n := 0
		mustClaimed := func(t *testing.T, holder string) tidemark.Source {
			t.Helper()
			n++
			src, err := st.AddSource(ctx, ingest.NewSource{Name: "s" + string(rune('a'+n)), Kind: "git", Location: "x", Interval: time.Minute, RetryBudget: 3})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Claim(ctx, src.ID, holder, time.Hour); err != nil {
				t.Fatal(err)
			}
			return src
		}
		mustLost := func(t *testing.T, src tidemark.Source) {
			t.Helper()
			runs, err := st.Runs(ctx, ingest.RunFilter{SourceID: src.ID})
			if err != nil {
				t.Fatal(err)
			}
			var lost int
			for _, r := range runs {
				if r.Outcome == tidemark.OutcomeLost {
					lost++
					if !strings.Contains(r.Error, "is gone") {
						t.Errorf("lost run's reason %q does not say its holder is gone", r.Error)
					}
				}
			}
			if lost != 1 || len(runs) != 2 {
				t.Fatalf("runs %+v, want the gone holder's run lost and one new", runs)
			}
		}

		t.Run("Claim", func(t *testing.T) {
			src := mustClaimed(t, "box:41")
			c, err := st.Claim(ctx, src.ID, "box:42", time.Hour)
			if err != nil {
				t.Fatalf("claim over a gone holder: %v", err)
			}
			if c.Reentered || c.Holder != "box:42" {
				t.Fatalf("claim %+v", c)
			}
			mustLost(t, src)
		})
		t.Run("ClaimDue", func(t *testing.T) {
			src := mustClaimed(t, "box:41")
			cs, err := st.ClaimDue(ctx, "box:42", time.Hour, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 1 || cs[0].SourceID != src.ID {
				t.Fatalf("claimed %+v, want the gone holder's source", cs)
			}
			mustLost(t, src)
		})
		for _, holder := range []string{"box:43", "other:41", "worker-1"} {
			t.Run("kept by "+holder, func(t *testing.T) {
				src := mustClaimed(t, holder)
				_, err := st.Claim(ctx, src.ID, "box:42", time.Hour)
				var held *tidemark.HeldError
				if !errors.As(err, &held) || !errors.Is(err, tidemark.ErrClaimHeld) {
					t.Fatalf("claim: %v, want a HeldError", err)
				}
				if held.Holder != holder || !held.Until.Equal(env.Clock.Now().Add(time.Hour).Truncate(time.Millisecond)) {
					t.Errorf("held %+v", held)
				}
				cs, err := st.ClaimDue(ctx, "box:42", time.Hour, 10)
				if err != nil || len(cs) != 0 {
					t.Fatalf("ClaimDue took %+v, %v", cs, err)
				}
				if _, err := st.Retry(ctx, src.Name, "op", ""); !errors.Is(err, tidemark.ErrClaimHeld) {
					t.Fatalf("retry over a live holder: %v", err)
				}
			})
		}
	})
}
