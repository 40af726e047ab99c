package outbox_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A write whose receiver cannot be reached at all (nothing listens: the
// dial is refused) never left, so it did not land: its intent is pending
// again, sent later, even on a lane that can decide nothing in doubt (at
// most once), and the lane is failing meanwhile. Once the receiver is
// there, the write lands, once, and the run of failures ends.
func TestAWriteThatNeverLeftIsSentAgainLater(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		h := newHarness(t, b, laneOpts{atMostOnce: true})
		in := h.draft("t1", "one")

		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + ln.Addr().String() + "/hook"
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
		lane := mustLane(t, h)
		lane.Settings["url"] = dead
		prov, err := providers.New(lane, h.env.Clock)
		if err != nil {
			t.Fatal(err)
		}
		down := &outbox.Deliverer{Store: h.st, Provider: prov, Lane: h.lane, Holder: "cron-1", Clock: h.env.Clock}
		steps, err := down.RunOnce(ctx, func(context.Context, time.Duration) error { return nil })
		deferred, ok := errors.AsType[*outbox.DeferredError](err)
		if !ok {
			t.Fatalf("a pass whose receiver refuses connections: %v, want it deferred (the lane backs off)", err)
		}
		sent := 0
		for _, s := range steps {
			if s.Kind != outbox.StepSent {
				continue
			}
			sent++
			if s.Outcome != outbox.OutcomeNotLanded {
				t.Fatalf("a write whose connection was refused: %s (%s), want not_landed", s.Outcome, s.Error)
			}
		}
		if sent == 0 {
			t.Fatal("nothing was sent: the test proves nothing")
		}
		if cur := h.intent(in.ID); cur.State != outbox.StatePending {
			t.Fatalf("the intent is %s, want pending", cur.State)
		}
		if l := mustLane(t, h); l.Failing == nil {
			t.Fatal("the lane whose receiver cannot be reached is not failing")
		}
		if err := down.Release(ctx); err != nil {
			t.Fatal(err)
		}

		h.env.Clock.Set(deferred.Until)
		up := h.deliverer("cron-2")
		h.runOnce(up)
		h.assertExactlyOnce([]outbox.Intent{in})
		if cur := h.intent(in.ID); cur.State != outbox.StateLanded {
			t.Fatalf("the intent is %s once its receiver is there, want landed", cur.State)
		}
		if l := mustLane(t, h); l.Failing != nil {
			t.Fatalf("the lane is failing after the write landed: %+v", l.Failing)
		}
	})
}
