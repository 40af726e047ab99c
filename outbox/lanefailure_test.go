package outbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// countDown is a lane's provider whose receiver is down: its counter
// cannot be read, so every step that would send fails before anything is
// journaled.
type countDown struct{ provider.Provider }

func (countDown) Count(context.Context) (int64, error) {
	return 0, errors.New("GET http://127.0.0.1:1/count: connection refused")
}

// Every delivery step says on the lane whether it failed, whoever takes
// it: a pass (deliver --once, run --once, the library's RunOnce) as much
// as the daemon's loop, so a lane delivered from cron shows failing too.
// Failed steps in a row are one run, kept with since when, how many and
// the latest error; the first step that goes through ends it, even one a
// writer before left. A step refused because another writer holds the
// lane, or cut short by its own caller, is not the lane failing.
func TestEveryDeliveryStepRecordsTheLanesFailures(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		h := newHarness(t, b, laneOpts{})
		h.draft("t1", "one")
		failing := func() *outbox.LaneFailure {
			t.Helper()
			l, err := h.st.Lane(ctx, h.lane)
			if err != nil {
				t.Fatal(err)
			}
			return l.Failing
		}

		down := h.deliverer("cron-1")
		down.Provider = countDown{down.Provider}
		first := h.env.Clock.Now()
		for i := range 2 {
			h.env.Clock.Set(first.Add(time.Duration(i) * time.Minute))
			if _, err := down.RunOnce(ctx, nil); err == nil || !strings.Contains(err.Error(), "connection refused") {
				t.Fatalf("a pass whose receiver is down: %v, want its error", err)
			}
		}
		f := failing()
		if f == nil || f.Failures != 2 || !f.Since.Equal(first) || !f.At.Equal(first.Add(time.Minute)) || !strings.Contains(f.Last, "connection refused") {
			t.Fatalf("after two passes that failed: %+v, want 2 in a row since %s, saying why", f, first)
		}
		v := outbox.LaneView{Lane: mustLane(t, h)}
		if v.Judge(nil); v.Health != outbox.HealthFailing {
			t.Fatalf("health %q, want %q", v.Health, outbox.HealthFailing)
		}

		// Another writer holds the lane: its step is refused, and that is
		// not the lane failing.
		held := h.deliverer("cron-2")
		if _, err := held.Step(ctx); err == nil {
			t.Fatal("a step under another writer's lease went through")
		}
		if f := failing(); f == nil || f.Failures != 2 {
			t.Fatalf("after a step another writer's lease refused: %+v, want the run of 2 as it was", f)
		}
		if err := down.Release(ctx); err != nil {
			t.Fatal(err)
		}

		// The next pass, a new deliverer with the receiver back, ends the
		// run an earlier one left.
		up := h.deliverer("cron-3")
		h.runOnce(up)
		if f := failing(); f != nil || h.srv.Count() != 1 {
			t.Fatalf("after a pass that went through: failing %+v, %d writes; want none, 1", f, h.srv.Count())
		}

		// A step its caller cut short says nothing of the lane.
		up.Provider = countDown{up.Provider}
		h.draft("t1", "two")
		cut, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := up.Step(cut); !errors.Is(err, context.Canceled) {
			t.Fatalf("a step whose context was cancelled: %v", err)
		}
		if f := failing(); f != nil {
			t.Fatalf("after a step cut short: failing %+v, want none", f)
		}
	})
}

func mustLane(t *testing.T, h *harness) outbox.Lane {
	t.Helper()
	l, err := h.st.Lane(context.Background(), h.lane)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
