package providers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/outbox/providertest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// deliverAll steps the lane's deliverer until rechecks of what is
// unresolved send nothing more, and returns the intents.
func deliverAll(t *testing.T, env sqltest.Env, st *sqlstore.OutboxStore, d *outbox.Deliverer, n int) []outbox.Intent {
	t.Helper()
	ctx := context.Background()
	idle := 0
	for step := 0; idle < 3; step++ {
		if step > 30*n {
			t.Fatalf("not done after %d steps", step)
		}
		env.Clock.Advance(time.Second)
		s, err := d.Step(ctx)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		switch s.Kind {
		case outbox.StepWait:
			env.Clock.Set(*s.Until)
		case outbox.StepIdle:
			idle++
			env.Clock.Advance(time.Hour) // the recheck of an unresolved intent
		case outbox.StepSent, outbox.StepBucketed:
			idle = 0
		}
	}
	left, err := st.ListIntents(ctx, outbox.IntentFilter{Lane: d.Lane})
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// A lane's guarantee, derived from its provider's capabilities and its
// settings, is the one the deliverer keeps when answers are lost: a lane
// with nothing to read never resends a write in doubt (at most once: never
// twice, the lost ones unresolved and visible); the same lane opted in to
// resend_in_doubt resends it (at least once: never lost, twice allowed); a
// lane that can list its writes decides each one (exactly once).
func TestTheDelivererKeepsTheLanesGuarantee(t *testing.T) {
	const n, every = 12, 3
	for _, tc := range []struct {
		name     string
		settings func(map[string]string)
		want     provider.Guarantee
	}{
		{"at most once", func(s map[string]string) { delete(s, "list_url"); delete(s, "probe_url"); delete(s, "count_url") }, provider.AtMostOnce},
		{"at least once", func(s map[string]string) {
			delete(s, "list_url")
			delete(s, "probe_url")
			delete(s, "count_url")
			s["resend_in_doubt"] = "true"
		}, provider.AtLeastOnce},
		{"exactly once", func(s map[string]string) { delete(s, "count_url") }, provider.ExactlyOnce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			env := sqltest.NewEnv(5)
			db := sqltest.MustOpenURL(t, sqltest.NewSQLiteURL(t), env)
			st := db.Outbox()
			t.Setenv("TM_HOOK_SECRET", "s3cret")
			srv := providertest.New(t, env.Clock, []byte("s3cret"))
			s := srv.Settings()
			s["secret_env"] = "TM_HOOK_SECRET"
			tc.settings(s)
			g, err := providers.Guarantee("webhook", s)
			if err != nil {
				t.Fatal(err)
			}
			if g.Guarantee != tc.want {
				t.Fatalf("the lane's guarantee is %s, want %s: %s", g.Guarantee, tc.want, g.Why)
			}
			if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "lane", Provider: "webhook", Settings: s}}); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if _, err := st.Draft(ctx, outbox.Draft{Lane: "lane", Target: "t", Body: fmt.Sprintf("write %d", i)}); err != nil {
					t.Fatal(err)
				}
			}
			lane, err := st.Lane(ctx, "lane")
			if err != nil {
				t.Fatal(err)
			}
			prov, err := providers.New(lane, env.Clock)
			if err != nil {
				t.Fatal(err)
			}
			srv.DropEvery(every)
			d := &outbox.Deliverer{Store: st, Provider: prov, Lane: "lane", Holder: "w", Clock: env.Clock, LeaseTTL: 2 * time.Hour}
			intents := deliverAll(t, env, st, d, n)
			if srv.Dropped() == 0 {
				t.Fatal("no answer was lost: the test proves nothing")
			}
			states := map[outbox.State]int{}
			for _, in := range intents {
				states[in.State]++
				got := srv.CountOf(in.Target, in.Parent, in.BodySHA256)
				switch tc.want {
				case provider.AtMostOnce:
					if got > 1 || (in.State == outbox.StateLanded && got != 1) {
						t.Errorf("%s: intent %d is %s and reached the receiver %d times", tc.want, in.Rank, in.State, got)
					}
				case provider.AtLeastOnce:
					if got < 1 || in.State != outbox.StateLanded {
						t.Errorf("%s: intent %d is %s and reached the receiver %d times", tc.want, in.Rank, in.State, got)
					}
				case provider.ExactlyOnce:
					if got != 1 || in.State != outbox.StateLanded {
						t.Errorf("%s: intent %d is %s and reached the receiver %d times", tc.want, in.Rank, in.State, got)
					}
				}
			}
			switch tc.want {
			case provider.AtMostOnce:
				if states[outbox.StateUnresolved] != srv.Dropped() {
					t.Errorf("%d answers lost, %d intents left unresolved: %v", srv.Dropped(), states[outbox.StateUnresolved], states)
				}
			case provider.AtLeastOnce:
				if len(srv.Duplicates()) == 0 {
					t.Errorf("no write in doubt was resent: %v", states)
				}
			}
		})
	}
}

// ntfy keeps messages for its cache duration only: a write in doubt
// reconciled after that is missing from the poll though it landed, and
// must stay unresolved rather than be sent again.
func TestAWriteInDoubtBeyondTheListingsHorizonIsNotResent(t *testing.T) {
	ctx := context.Background()
	env := sqltest.NewEnv(9)
	db := sqltest.MustOpenURL(t, sqltest.NewSQLiteURL(t), env)
	st := db.Outbox()
	r := &receiver{clk: env.Clock}
	srv, drop := providertest.NewDropServer(t, ntfyKeeping(r, time.Hour))
	settings := map[string]string{"base_url": srv.URL, "topics": "alerts", "cache_duration": "1h"}
	if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "lane", Provider: "ntfy", Settings: settings}}); err != nil {
		t.Fatal(err)
	}
	in, err := st.Draft(ctx, outbox.Draft{Lane: "lane", Target: "alerts", Body: "once"})
	if err != nil {
		t.Fatal(err)
	}
	lane, err := st.Lane(ctx, "lane")
	if err != nil {
		t.Fatal(err)
	}
	prov, err := providers.New(lane, env.Clock)
	if err != nil {
		t.Fatal(err)
	}
	drop.DropEvery(1)
	a := &outbox.Deliverer{Store: st, Provider: prov, Lane: "lane", Holder: "a", Clock: env.Clock, LeaseTTL: time.Minute}
	if s, err := a.Step(ctx); err != nil || s.Outcome != outbox.OutcomeUnknown {
		t.Fatalf("first step %+v %v", s, err)
	}
	// The writer dies; the lane is reconciled two hours later, when ntfy
	// no longer keeps the message.
	env.Clock.Advance(2 * time.Hour)
	b := &outbox.Deliverer{Store: st, Provider: prov, Lane: "lane", Holder: "b", Clock: env.Clock, LeaseTTL: 10 * time.Hour}
	deliverAll(t, env, st, b, 1)
	got, err := st.Intent(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bodies, _ := r.snapshot(); len(bodies) != 1 || got.State != outbox.StateUnresolved {
		t.Fatalf("the receiver holds %d writes and the intent is %s; want 1 and unresolved", len(bodies), got.State)
	}
}

// Matrix makes a send idempotent by its transaction id (the intent's
// key), for as long as the homeserver keeps it: a write in doubt that no
// fresh read decides is resent with the same id within that window and
// lands once; past it, it stays unresolved.
func TestMatrixResendsAWriteInDoubtWithItsTransactionID(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wait      time.Duration
		wantSends int
		want      outbox.State
	}{
		{"within the window", time.Minute, 2, outbox.StateLanded},
		{"past the window", time.Hour, 1, outbox.StateUnresolved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			env := sqltest.NewEnv(10)
			db := sqltest.MustOpenURL(t, sqltest.NewSQLiteURL(t), env)
			st := db.Outbox()
			t.Setenv("TM_MATRIX_TOKEN", "mtok")
			r := &receiver{clk: env.Clock}
			m := newMatrixReceiver(r)
			srv, drop := providertest.NewDropServer(t, m.handler())
			// No rooms to read: only the key can decide.
			settings := map[string]string{"homeserver_url": srv.URL, "token_env": "TM_MATRIX_TOKEN"}
			if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "lane", Provider: "matrix", Settings: settings}}); err != nil {
				t.Fatal(err)
			}
			in, err := st.Draft(ctx, outbox.Draft{Lane: "lane", Target: "!room:example.org", Body: "once"})
			if err != nil {
				t.Fatal(err)
			}
			lane, err := st.Lane(ctx, "lane")
			if err != nil {
				t.Fatal(err)
			}
			prov, err := providers.New(lane, env.Clock)
			if err != nil {
				t.Fatal(err)
			}
			d := &outbox.Deliverer{Store: st, Provider: prov, Lane: "lane", Holder: "a", Clock: env.Clock, LeaseTTL: 10 * time.Hour}
			drop.DropEvery(1)
			if s, err := d.Step(ctx); err != nil || s.Outcome != outbox.OutcomeUnknown {
				t.Fatalf("first step %+v %v", s, err)
			}
			drop.DropEvery(0)
			env.Clock.Advance(tc.wait)
			for range 4 {
				if _, err := d.Step(ctx); err != nil {
					t.Fatal(err)
				}
			}
			got, err := st.Intent(ctx, in.ID)
			if err != nil {
				t.Fatal(err)
			}
			bodies, _ := r.snapshot()
			if len(bodies) != 1 || m.sends != tc.wantSends || got.State != tc.want {
				t.Fatalf("the room holds %d events from %d sends; the intent is %s; want 1 from %d, %s", len(bodies), m.sends, got.State, tc.wantSends, tc.want)
			}
		})
	}
}
