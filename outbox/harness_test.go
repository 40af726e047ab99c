package outbox_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/outbox/providertest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

const (
	secretEnv = "TM_TEST_WEBHOOK_SECRET"
	secret    = "s3cret"
	helperEnv = "TM_OUTBOX_HELPER"
)

// TestMain doubles as the crash tests' delivering process: re-executed
// with TM_OUTBOX_HELPER set, the test binary delivers one lane once
// (failpoints armed from TIDEMARK_FAILPOINTS) and exits.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		if err := helper(); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helper() error {
	if err := failpoint.ArmFromEnv(); err != nil {
		return err
	}
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, os.Getenv("TM_DB_URL"), sqlstore.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	st := db.Outbox()
	lane, err := st.Lane(ctx, os.Getenv("TM_LANE"))
	if err != nil {
		return err
	}
	prov, err := providers.New(lane, clock.System{})
	if err != nil {
		return err
	}
	d := &outbox.Deliverer{Store: st, Provider: prov, Lane: lane.Name, Holder: "helper", Clock: clock.System{}, LeaseTTL: 30 * time.Second}
	_, err = d.RunOnce(ctx, nil)
	return err
}

type harness struct {
	t    *testing.T
	env  sqltest.Env
	url  string
	db   *sqlstore.DB
	st   *sqlstore.OutboxStore
	srv  *providertest.Server
	lane string
}

type laneOpts struct {
	minGap  time.Duration
	skew    time.Duration
	noCount bool
	// atMostOnce: the lane has nothing that decides a write in doubt
	// (no listing, probe or counter), as a bare webhook.
	atMostOnce bool
	retire     outbox.RetirementPolicy
	envClock   func(*clock.Fake)
}

func newHarness(t *testing.T, b sqltest.Backend, o laneOpts) *harness {
	t.Helper()
	t.Setenv(secretEnv, secret)
	env := sqltest.NewEnv(7)
	if o.envClock != nil {
		o.envClock(env.Clock)
	}
	h := &harness{t: t, env: env, url: b.NewURL(t), lane: "hook"}
	h.db = sqltest.MustOpenURL(t, h.url, env)
	h.st = h.db.Outbox()
	h.srv = providertest.New(t, env.Clock, []byte(secret))
	settings := h.srv.Settings()
	settings["secret_env"] = secretEnv
	if o.noCount || o.atMostOnce {
		delete(settings, "count_url")
	}
	if o.atMostOnce {
		delete(settings, "list_url")
		delete(settings, "probe_url")
	}
	if _, err := h.st.AddLane(context.Background(), sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: h.lane, Provider: "webhook", Settings: settings, MinGap: tidemark.Duration(o.minGap), Skew: tidemark.Duration(o.skew), Retirement: o.retire}}); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) provider() provider.Provider {
	h.t.Helper()
	l, err := h.st.Lane(context.Background(), h.lane)
	if err != nil {
		h.t.Fatal(err)
	}
	p, err := providers.New(l, h.env.Clock)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) deliverer(holder string) *outbox.Deliverer {
	return &outbox.Deliverer{Store: h.st, Provider: h.provider(), Lane: h.lane, Holder: holder, Clock: h.env.Clock, LeaseTTL: time.Minute}
}

func (h *harness) draft(target, body string) outbox.Intent {
	h.t.Helper()
	in, err := h.st.Draft(context.Background(), outbox.Draft{Lane: h.lane, Target: target, Body: body})
	if err != nil {
		h.t.Fatal(err)
	}
	return in
}

func (h *harness) intent(id string) outbox.Intent {
	h.t.Helper()
	in, err := h.st.Intent(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return in
}

func (h *harness) step(d *outbox.Deliverer) outbox.Step {
	h.t.Helper()
	s, err := d.Step(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// runOnce delivers until idle, advancing the fake clock through the gate.
func (h *harness) runOnce(d *outbox.Deliverer) []outbox.Step {
	h.t.Helper()
	steps, err := d.RunOnce(context.Background(), func(_ context.Context, dur time.Duration) error {
		h.env.Clock.Advance(dur)
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return steps
}

// assertExactlyOnce checks every intent against the provider's own count:
// landed ones are there exactly once, the rest not at all, and the
// provider holds nothing twice.
func (h *harness) assertExactlyOnce(intents []outbox.Intent) {
	h.t.Helper()
	landed := 0
	for _, in := range intents {
		cur := h.intent(in.ID)
		n := h.srv.CountOf(in.Target, in.Parent, in.BodySHA256)
		switch cur.State {
		case outbox.StateLanded:
			landed++
			if n != 1 {
				h.t.Errorf("intent %s (rank %d) landed, provider holds it %d times", in.ID, in.Rank, n)
			}
		case outbox.StateUnexecutable, outbox.StateUnresolved:
			if n > 1 {
				h.t.Errorf("intent %s is %s, provider holds it %d times", in.ID, cur.State, n)
			}
		default:
			h.t.Errorf("intent %s is %s after recovery; want landed, unexecutable or unresolved", in.ID, cur.State)
		}
	}
	if d := h.srv.Duplicates(); len(d) != 0 {
		h.t.Errorf("provider holds duplicates: %v", d)
	}
	if h.srv.Count() != landed {
		h.t.Errorf("provider holds %d writes, %d intents landed", h.srv.Count(), landed)
	}
}

// laneDetail reads the harness's lane as its view does, with what it
// counts and any refusal that stands.
func (h *harness) laneDetail() outbox.Lane {
	h.t.Helper()
	l, err := h.st.LaneDetail(context.Background(), h.lane)
	if err != nil {
		h.t.Fatal(err)
	}
	return l
}
