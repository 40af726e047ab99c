package outbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/fieldtext"
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
		// Its times read as all text output shows them: in UTC, saying so.
		if want := "since " + fieldtext.Day(first) + " (the latest at " + fieldtext.Day(first.Add(time.Minute)) + ")"; !strings.Contains(v.Problem, want) {
			t.Fatalf("problem %q, want it to say %q", v.Problem, want)
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

// A receiver that is up but fails each write (it answers 500: the write
// did not land) fails the lane's steps as much as one that cannot be
// reached: the lane shows failing, saying what the receiver answered,
// until a write goes through.
func TestWritesThatFailMakeTheLaneFailing(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		h := newHarness(t, b, laneOpts{noCount: true})
		c := h.draft("t1", "one")
		h.srv.FailWrites(2)
		d := h.deliverer("w1")
		for h.srv.Posts() < 2 {
			s := h.step(d)
			if s.Until != nil && s.Until.After(h.env.Clock.Now()) {
				h.env.Clock.Set(*s.Until)
			} else {
				h.env.Clock.Advance(time.Second)
			}
		}
		l := mustLane(t, h)
		if l.Failing == nil || l.Failing.Failures != 2 || !strings.Contains(l.Failing.Last, "500") {
			t.Fatalf("after two writes the receiver failed: failing %+v, want 2 in a row saying it answered 500", l.Failing)
		}
		// The receiver takes writes again: once the failed write is
		// decided and sent again, it lands and the run ends.
		for i := 0; h.srv.Count() == 0; i++ {
			if i > 200 {
				t.Fatal("the write never landed")
			}
			s := h.step(d)
			if s.Until != nil && s.Until.After(h.env.Clock.Now()) {
				h.env.Clock.Set(*s.Until)
			} else {
				h.env.Clock.Advance(time.Second)
			}
		}
		h.assertExactlyOnce([]outbox.Intent{c})
		if l, err := h.st.Lane(ctx, h.lane); err != nil || l.Failing != nil {
			t.Fatalf("after the write went through: failing %+v (%v), want none", l.Failing, err)
		}
	})
}

// A pass that made a write that failed and that had not landed by its
// end left work undone: RunOnce says so (*outbox.WritesFailedError, which
// is unavailable: `deliver --once` and `run --once` exit 5), naming the
// intents. A write that failed and was then sent again and landed in the
// same pass leaves nothing undone.
func TestAPassWhoseWriteFailedSaysSo(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		sleep := func(h *harness) func(context.Context, time.Duration) error {
			return func(_ context.Context, d time.Duration) error { h.env.Clock.Advance(d); return nil }
		}

		// At most once: the receiver answers 500, so the write is in doubt
		// and nothing can decide it.
		h := newHarness(t, b, laneOpts{atMostOnce: true})
		in := h.draft("t1", "one")
		h.srv.FailWrites(1)
		d := h.deliverer("cron-1")
		_, err := d.RunOnce(ctx, sleep(h))
		failed, ok := errors.AsType[*outbox.WritesFailedError](err)
		if !ok || !errors.Is(err, tidemark.ErrUnavailable) {
			t.Fatalf("a pass whose write is left in doubt: %v, want a *WritesFailedError that is unavailable", err)
		}
		if len(failed.Intents) != 1 || failed.Intents[0] != in.ID || !strings.Contains(err.Error(), "500") {
			t.Fatalf("the pass's error %q names %v; want intent %s and what the receiver answered", err, failed.Intents, in.ID)
		}
		if cur := h.intent(in.ID); cur.State != outbox.StateUnresolved {
			t.Fatalf("the write in doubt on an at-most-once lane is %s, want unresolved", cur.State)
		}

		// Counted: the receiver answers 500 and the counter shows the
		// write did not land; it is sent again in the pass, and lands.
		h2 := newHarness(t, b, laneOpts{})
		in2 := h2.draft("t1", "two")
		h2.srv.FailWrites(1)
		steps, err := h2.deliverer("cron-2").RunOnce(ctx, sleep(h2))
		if err != nil {
			t.Fatalf("a pass whose failed write then landed: %v, want nil (steps %+v)", err, steps)
		}
		if h2.srv.Posts() != 2 || h2.intent(in2.ID).State != outbox.StateLanded {
			t.Fatalf("%d posts, intent %s; want the failed write sent again and landed", h2.srv.Posts(), h2.intent(in2.ID).State)
		}
	})
}

// A lane's run of failed steps ends once a pass finds nothing it can
// send or decide: a write in doubt on an at-most-once lane waits for an
// operator, and the lane shows it as unresolved, not failing forever.
// What the lane says of a failed write is what happened: a receiver that
// answered 500 did answer, and the problem does not promise a retry.
func TestAnUndecidableWriteDoesNotKeepTheLaneFailing(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		h := newHarness(t, b, laneOpts{atMostOnce: true})
		in := h.draft("t1", "one")
		h.srv.FailWrites(1)
		d := h.deliverer("cron-1")
		s := h.step(d)
		if s.Kind != outbox.StepSent || s.Outcome != outbox.OutcomeUnknown {
			t.Fatalf("a write the receiver answered 500: %+v, want sent, unknown", s)
		}
		l := mustLane(t, h)
		if l.Failing == nil || strings.Contains(l.Failing.Last, "no answer") || !strings.Contains(l.Failing.Last, "in doubt") {
			t.Fatalf("after a write answered 500: failing %+v, want it failing, saying the write is in doubt (not that no answer came)", l.Failing)
		}
		v := outbox.LaneView{Lane: l}
		if v.Judge(nil); v.Health != outbox.HealthFailing || strings.Contains(v.Problem, "retried with a growing pause") {
			t.Fatalf("health %q, problem %q: want failing, not promising a retry of a write that is never resent", v.Health, v.Problem)
		}

		// The rest of the pass: the write in doubt cannot be decided, and
		// nothing else is pending.
		if _, err := d.RunOnce(ctx, nil); err != nil {
			t.Fatalf("the rest of the pass: %v", err)
		}
		if err := d.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if cur := h.intent(in.ID); cur.State != outbox.StateUnresolved {
			t.Fatalf("the intent is %s, want unresolved", cur.State)
		}
		l = h.laneDetail()
		v = outbox.LaneView{Lane: l}
		if v.Judge(nil); l.Failing != nil || v.Health != outbox.HealthUnresolved {
			t.Fatalf("after a pass that found nothing it can send or decide: failing %+v, health %q; want none, unresolved", l.Failing, v.Health)
		}

		// Later writes go through, and the lane stays out of failing.
		h.draft("t1", "two")
		later := h.deliverer("cron-2")
		h.runOnce(later)
		if l := mustLane(t, h); l.Failing != nil {
			t.Fatalf("after a later write landed: failing %+v", l.Failing)
		}

		// A reconciliation asked for says why the write stays unresolved:
		// the lane has no listing to be too old.
		r, err := later.Reconcile(ctx)
		if err != nil || r.Plan == nil {
			t.Fatalf("reconcile: %+v, %v", r, err)
		}
		var text strings.Builder
		if err := r.Plan.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "unresolved:") || strings.Contains(text.String(), "listing") || !strings.Contains(text.String(), "at most once") {
			t.Fatalf("the report of a lane with no listing:\n%s\nwant its unresolved write explained by the lane being at most once", text.String())
		}
	})
}
