package outbox_test

import (
	"context"
	"errors"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// cancelAfterPost is Ctrl-C arriving right after the provider answered.
type cancelAfterPost struct {
	provider.Provider
	cancel context.CancelFunc
}

func (c cancelAfterPost) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	p, err := c.Provider.Post(ctx, w)
	c.cancel()
	return p, err
}

// cancelAtFence is Ctrl-C arriving after the attempt was journaled and
// before the write left.
type cancelAtFence struct {
	outbox.Store
	cancel context.CancelFunc
}

func (c cancelAtFence) CheckLease(ctx context.Context, l outbox.Lease) error {
	err := c.Store.CheckLease(ctx, l)
	c.cancel()
	return err
}

func TestAnAnswerIsRecordedEvenWhenCancelledRightAfterIt(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{})
		a := h.draft("t1", "one")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		d := h.deliverer("w1")
		d.Provider = cancelAfterPost{Provider: d.Provider, cancel: cancel}
		s, err := d.Step(ctx)
		if err != nil {
			t.Fatalf("step: %v", err)
		}
		if s.Outcome != outbox.OutcomeLanded {
			t.Fatalf("step %+v: want landed", s)
		}
		if got := h.intent(a.ID); got.State != outbox.StateLanded || got.RemoteID == "" {
			t.Fatalf("intent %+v: the provider's answer was lost", got)
		}
		lane, err := h.st.Lane(context.Background(), h.lane)
		if err != nil || lane.NeedsReconcile || lane.InFlight != "" {
			t.Fatalf("lane %+v %v: left in doubt", lane, err)
		}
		h.assertExactlyOnce([]outbox.Intent{a})
	})
}

func TestAWriteCancelledBeforeItLeftIsNotInDoubt(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{})
		a := h.draft("t1", "one")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		d := h.deliverer("w1")
		d.Store = cancelAtFence{Store: h.st, cancel: cancel}
		if _, err := d.Step(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("step: %v; want context.Canceled", err)
		}
		if h.srv.Posts() != 0 {
			t.Fatalf("%d posts after a cancel before sending", h.srv.Posts())
		}
		if got := h.intent(a.ID); got.State != outbox.StatePending {
			t.Fatalf("intent is %s; want pending again", got.State)
		}
		lane, err := h.st.Lane(context.Background(), h.lane)
		if err != nil || lane.NeedsReconcile || lane.InFlight != "" {
			t.Fatalf("lane %+v %v: left in doubt", lane, err)
		}
		d2 := h.deliverer("w1")
		h.runOnce(d2)
		h.assertExactlyOnce([]outbox.Intent{a})
	})
}

// cancelInFlight is Ctrl-C arriving while the write is in flight: on a
// connection made for it, as its request is being written, so before any
// answer can come. (Cancelled before a connection was made, the write was
// not sent at all.)
type cancelInFlight struct {
	provider.Provider
	cancel context.CancelFunc
}

func (c cancelInFlight) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { c.cancel() }})
	return c.Provider.Post(ctx, w)
}

// Ctrl-C while a write is in flight: the pass ends with the attempt's
// journal written (in doubt, saying it was interrupted), and the
// deliverer still holds the lease it can give up on the way out, so the
// same command run again is not refused.
func TestAPassInterruptedInFlightReleasesItsLease(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		h := newHarness(t, b, laneOpts{noCount: true}) // no counter to tell
		ins := []outbox.Intent{h.draft("t1", "one"), h.draft("t1", "two")}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		d := h.deliverer("w1")
		d.Provider = cancelInFlight{Provider: d.Provider, cancel: cancel}
		// Should the request reach the receiver, it is still at the write
		// when the answer is given up on: whichever the client sees first,
		// its own Ctrl-C or the lost answer, the write is in doubt.
		h.srv.HoldNext()
		if _, err := d.RunOnce(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("run once: %v; want context.Canceled", err)
		}
		if got := h.intent(ins[0].ID); got.State != outbox.StateUnresolved || !strings.HasPrefix(got.StateReason, "interrupted while in flight") {
			t.Fatalf("intent %+v: want it in doubt, saying it was interrupted", got)
		}
		if err := d.Release(context.Background()); err != nil {
			t.Fatalf("release: %v", err)
		}
		lane, err := h.st.Lane(context.Background(), h.lane)
		if err != nil || lane.LeaseHolder != "" {
			t.Fatalf("lane %+v %v: the interrupted writer's lease is still held", lane, err)
		}
		if _, err := h.st.Acquire(context.Background(), h.lane, "w2", time.Minute); err != nil {
			t.Fatalf("the next writer is refused: %v", err)
		}
	})
}
