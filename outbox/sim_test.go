package outbox_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/ids"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

var (
	simSeeds = flag.Int("sim-seeds", 12, "seeds for TestSimulation")
	simSeed  = flag.Int64("sim-seed", -1, "replay this one seed of TestSimulation")
)

// TestSimulation drives the real deliverer, store and provider through a
// seeded random schedule of faults — failures at every failpoint, lost
// answers, stale caches without or with Age, out-of-order emission,
// moderation, Retry-After, writers dying and being replaced — and checks
// after every step that the provider holds nothing twice and that every
// intent recorded landed is there exactly once. At the end the faults stop
// and every intent must land exactly once. A failing seed is printed and
// replays with -sim-seed.
func TestSimulation(t *testing.T) {
	seeds := make([]int64, 0, *simSeeds)
	if *simSeed >= 0 {
		seeds = append(seeds, *simSeed)
	} else {
		for s := range *simSeeds {
			seeds = append(seeds, int64(s+1))
		}
	}
	b := sqltest.Backends()[0]
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("replay with: go test ./outbox -run TestSimulation -sim-seed %d", seed)
				}
			}()
			simulate(t, b, seed)
		})
	}
}

func simulate(t *testing.T, b sqltest.Backend, seed int64) {
	t.Cleanup(failpoint.Reset)
	r := ids.NewRand(uint64(seed))
	pick := func(n int) int { return int(r.Float64() * float64(n)) }
	h := newHarness(t, b, laneOpts{minGap: time.Second, skew: time.Second, noCount: pick(2) == 0})
	ctx := context.Background()
	var ins []outbox.Intent
	targets := []string{"a", "b", "c"}
	draft := func() {
		ins = append(ins, h.draft(targets[pick(len(targets))], fmt.Sprintf("body %d", len(ins))))
	}
	for range 4 {
		draft()
	}
	holder := 0
	d := h.deliverer("w0")
	points := []string{"outbox.send.after-journal", "outbox.send.after-send", "outbox.reconcile.after-read"}
	check := func(step int, what string) {
		t.Helper()
		if dup := h.srv.Duplicates(); len(dup) > 0 {
			t.Fatalf("step %d (%s): duplicates %v", step, what, dup)
		}
		for _, in := range ins {
			if cur := h.intent(in.ID); cur.State == outbox.StateLanded && h.srv.CountOf(in.Target, in.Parent, in.BodySHA256) != 1 {
				t.Fatalf("step %d (%s): intent %s landed but the provider holds it %d times", step, what, in.ID, h.srv.CountOf(in.Target, in.Parent, in.BodySHA256))
			}
		}
	}
	for step := range 60 {
		var what string
		switch pick(12) {
		case 0:
			what = "fail at a failpoint"
			if err := failpoint.Arm(points[pick(len(points))] + "=error@1"); err != nil {
				t.Fatal(err)
			}
		case 1:
			what = "lose an answer"
			h.srv.LoseAnswers(1)
		case 2:
			what = "freeze the cache"
			h.srv.Freeze()
		case 3:
			what = "thaw the cache"
			h.srv.Thaw()
		case 4:
			what = "drop Age"
			h.srv.OmitAge(pick(2) == 0)
		case 5:
			what = "reorder"
			h.srv.ReorderNext()
		case 6:
			what = "moderate"
			tg := targets[pick(len(targets))]
			if pick(2) == 0 {
				h.srv.Moderate(tg, "moderated")
			} else {
				h.srv.Moderate(tg, "")
			}
		case 7:
			what = "retry-after"
			h.srv.RetryAfterNext(time.Duration(1+pick(20)) * time.Second)
		case 8:
			what = "writer dies, another takes over"
			holder++
			d = h.deliverer(fmt.Sprint("w", holder))
			h.env.Clock.Advance(2 * time.Minute)
		case 9:
			what = "draft"
			draft()
		default:
			what = "time passes"
			h.env.Clock.Advance(time.Duration(pick(90)) * time.Second)
		}
		_, err := d.Step(ctx)
		var fp *failpoint.Error
		switch {
		case err == nil, errors.As(err, &fp), errors.Is(err, tidemark.ErrClaimHeld):
		default:
			t.Fatalf("step %d (%s): %v", step, what, err)
		}
		check(step, what)
	}
	// The faults stop; everything must land exactly once.
	failpoint.Reset()
	h.srv.Thaw()
	h.srv.OmitAge(false)
	h.srv.RetryAfterNext(0) // a "later" armed and not yet given would defer a pass
	for _, tg := range targets {
		h.srv.Moderate(tg, "")
	}
	d = h.deliverer("final")
	h.env.Clock.Advance(time.Hour)
	for range 8 {
		// A pass the lane's backoff after failed writes defers ends
		// there; a later pass sends. A pass whose write failed (a write
		// hold armed before the faults stopped answers 502) says so; a
		// later pass decides it.
		_, err := d.RunOnce(ctx, func(_ context.Context, dur time.Duration) error {
			h.env.Clock.Advance(dur)
			return nil
		})
		_, failed := errors.AsType[*outbox.WritesFailedError](err)
		if def, ok := errors.AsType[*outbox.DeferredError](err); ok {
			h.env.Clock.Set(def.Until)
		} else if err != nil && !failed {
			t.Fatal(err)
		}
		h.env.Clock.Advance(2 * time.Minute)
	}
	check(-1, "final")
	for _, in := range ins {
		if cur := h.intent(in.ID); cur.State != outbox.StateLanded {
			t.Errorf("intent %s is %s (%s) after the faults stopped", in.ID, cur.State, cur.StateReason)
		}
	}
	h.assertExactlyOnce(ins)
}
