package providers_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

const helperEnv = "TM_PROVIDERS_HELPER"

// TestMain doubles as the crash tests' delivering process: re-executed
// with TM_PROVIDERS_HELPER set, the binary delivers one lane once with the
// failpoints of TIDEMARK_FAILPOINTS armed, and exits.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		if err := deliverOnce(os.Getenv("TM_DB_URL"), os.Getenv("TM_LANE")); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func deliverOnce(dbURL, laneName string) error {
	if err := failpoint.ArmFromEnv(); err != nil {
		return err
	}
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, dbURL, sqlstore.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	st := db.Outbox()
	lane, err := st.Lane(ctx, laneName)
	if err != nil {
		return err
	}
	secrets, err := st.LaneSecrets(ctx, laneName)
	if err != nil {
		return err
	}
	prov, err := providers.NewWithSecrets(lane, secrets, clock.System{})
	if err != nil {
		return err
	}
	d := &outbox.Deliverer{Store: st, Provider: prov, Lane: lane.Name, Holder: "helper", Clock: clock.System{}, LeaseTTL: 30 * time.Second}
	_, err = d.RunOnce(ctx, nil)
	return err
}

// TestEveryProviderSurvivesACrashAtEachFailpoint kills a real delivering
// process at each outbox failpoint, for every provider kind against its
// fake, then recovers in this process an hour later (the crashed writer's
// lease has expired). Every intent lands exactly once at the receiver.
func TestEveryProviderSurvivesACrashAtEachFailpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	const n = 5
	for _, name := range setupNames(t) {
		k := fakes()[name]
		kind := k.providerKind(name)
		for _, fps := range [][]string{
			{"outbox.send.after-journal=crash@3"},
			{"outbox.send.after-send=crash@3"},
			{"outbox.send.after-send=crash@2", "outbox.reconcile.after-read=crash"},
		} {
			t.Run(fmt.Sprint(name, fps), func(t *testing.T) {
				ctx := context.Background()
				env := sqltest.NewEnv(3)
				// The receiver's clock, and the recovering writer's, run an
				// hour ahead of the crashed process's.
				env.Clock.Set(time.Now().Add(time.Hour))
				if k.realClock {
					// Past the crashed writer's lease (30s), well within a
					// key window.
					env.Clock.Set(time.Now().Add(time.Minute))
				}
				url := sqltest.NewSQLiteURL(t)
				db := sqltest.MustOpenURL(t, url, env)
				st := db.Outbox()
				settings, received, _ := k.settings(t, env)
				shown, secret := providers.Split(kind, settings)
				if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "lane", Provider: kind, Settings: shown, MinGap: tidemark.Duration(0)}, Secrets: secret}); err != nil {
					t.Fatal(err)
				}
				intents := draftN(t, st, k.targetFor(settings), n, "crash write %d")
				for _, fp := range fps {
					cmd := exec.Command(os.Args[0], "-test.run=^$")
					cmd.Env = append(os.Environ(), helperEnv+"=1", "TM_DB_URL="+url, "TM_LANE=lane", failpoint.EnvVar+"="+fp)
					out, err := cmd.CombinedOutput()
					var ee *exec.ExitError
					if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
						t.Fatalf("the helper was not killed at %s: %v\n%s", fp, err, out)
					}
				}
				left := deliverAll(t, env, st, laneWriter(t, st, secret, env, "recovery", time.Minute), n)
				if k.atMostOnce {
					assertAtMostOnce(t, intents, left, received())
					return
				}
				assertOnce(t, intents, left, received())
			})
		}
	}
}

// TestEveryProviderSurvivesAKillMidSend kills (SIGKILL, from outside) a
// real delivering process while its third write is in flight: the receiver
// took the write, and the process dies before the answer reaches it, with
// the attempt journaled and nothing recorded after. Recovery in this
// process then lands every intent exactly once where the lane's guarantee
// says so, and never twice where it says at most once.
func TestEveryProviderSurvivesAKillMidSend(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	const n = 5
	for _, name := range setupNames(t) {
		k := fakes()[name]
		kind := k.providerKind(name)
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			env := sqltest.NewEnv(6)
			env.Clock.Set(time.Now().Add(time.Hour))
			if k.realClock {
				env.Clock.Set(time.Now().Add(time.Minute))
			}
			url := sqltest.NewSQLiteURL(t)
			db := sqltest.MustOpenURL(t, url, env)
			st := db.Outbox()
			settings, received, d := k.settings(t, env)
			shown, secret := providers.Split(kind, settings)
			if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "lane", Provider: kind, Settings: shown, MinGap: tidemark.Duration(0)}, Secrets: secret}); err != nil {
				t.Fatal(err)
			}
			intents := draftN(t, st, k.targetFor(settings), n, "killed write %d")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=1", "TM_DB_URL="+url, "TM_LANE=lane")
			started := make(chan struct{})
			d.KillAt(3, func() {
				<-started
				_ = cmd.Process.Kill() // SIGKILL
			})
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			close(started)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
				t.Fatalf("the helper was not killed mid-send: %v\n%s", err, out.Bytes())
			}
			if got := len(received()); got != 3 {
				t.Fatalf("the receiver took %d writes before the kill, want 3", got)
			}
			left := deliverAll(t, env, st, laneWriter(t, st, secret, env, "recovery", time.Minute), n)
			if k.atMostOnce {
				assertAtMostOnce(t, intents, left, received())
				return
			}
			assertOnce(t, intents, left, received())
		})
	}
}

// TestEveryProviderRefusesAStaleWriter: a writer whose lease ran out while
// another took the lane over sends nothing more, and every intent lands
// once.
func TestEveryProviderRefusesAStaleWriter(t *testing.T) {
	const n = 4
	for _, name := range setupNames(t) {
		k := fakes()[name]
		kind := k.providerKind(name)
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			env := sqltest.NewEnv(4)
			db := sqltest.MustOpenURL(t, sqltest.NewSQLiteURL(t), env)
			st := db.Outbox()
			settings, received, _ := k.settings(t, env)
			if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "lane", Provider: kind, Settings: settings}}); err != nil {
				t.Fatal(err)
			}
			intents := draftN(t, st, k.targetFor(settings), n, "stale write %d")
			a := laneWriter(t, st, nil, env, "a", time.Minute)
			b := laneWriter(t, st, nil, env, "b", time.Hour)
			env.Clock.Advance(time.Second)
			if s, err := a.Step(ctx); err != nil || s.Kind != outbox.StepSent {
				t.Fatalf("a's first step: %+v %v", s, err)
			}
			env.Clock.Advance(2 * time.Minute) // a's lease runs out
			if s, err := b.Step(ctx); err != nil || s.Kind != outbox.StepSent {
				t.Fatalf("b's first step: %+v %v", s, err)
			}
			beforeBodies := received()
			before := len(beforeBodies)
			if s, err := a.Step(ctx); !errors.Is(err, tidemark.ErrClaimHeld) {
				t.Fatalf("the stale writer stepped: %+v %v", s, err)
			}
			if after := len(received()); after != before {
				t.Fatalf("the stale writer sent %d writes: %q then %q", after-before, beforeBodies, received())
			}
			left := deliverAll(t, env, st, b, n)
			assertOnce(t, intents, left, received())
		})
	}
}

func assertOnce(t *testing.T, intents, now []outbox.Intent, bodies []string) {
	t.Helper()
	got := map[string]int{}
	for _, b := range bodies {
		got[b]++
	}
	state := map[string]outbox.State{}
	for _, in := range now {
		state[in.ID] = in.State
	}
	for _, in := range intents {
		if got[in.Body] != 1 || state[in.ID] != outbox.StateLanded {
			t.Errorf("intent %q is %s and reached the receiver %d times", in.Body, state[in.ID], got[in.Body])
		}
	}
	if len(bodies) != len(intents) {
		t.Errorf("the receiver holds %d writes for %d intents", len(bodies), len(intents))
	}
}

// assertAtMostOnce: no intent reached the receiver twice; a landed one
// reached it once; what is not landed is unresolved (in doubt), never
// pending again.
func assertAtMostOnce(t *testing.T, intents, now []outbox.Intent, bodies []string) {
	t.Helper()
	got := map[string]int{}
	for _, b := range bodies {
		got[b]++
	}
	state := map[string]outbox.State{}
	for _, in := range now {
		state[in.ID] = in.State
	}
	for _, in := range intents {
		switch st, n := state[in.ID], got[in.Body]; {
		case n > 1:
			t.Errorf("intent %q is %s and reached the receiver %d times", in.Body, st, n)
		case st == outbox.StateLanded && n != 1:
			t.Errorf("intent %q is landed and reached the receiver %d times", in.Body, n)
		case st != outbox.StateLanded && st != outbox.StateUnresolved:
			t.Errorf("intent %q is %s", in.Body, st)
		}
	}
}

// draftN drafts n intents on lane "lane" for target, their bodies
// fmt.Sprintf(body, 1…n).
func draftN(t *testing.T, st *sqlstore.OutboxStore, target string, n int, body string) []outbox.Intent {
	t.Helper()
	var intents []outbox.Intent
	for i := range n {
		in, err := st.Draft(context.Background(), outbox.Draft{Lane: "lane", Target: target, Body: fmt.Sprintf(body, i+1)})
		if err != nil {
			t.Fatal(err)
		}
		intents = append(intents, in)
	}
	return intents
}

// laneWriter is a writer of lane "lane" as it is stored, with its secrets.
func laneWriter(t *testing.T, st *sqlstore.OutboxStore, secret map[string]string, env sqltest.Env, holder string, ttl time.Duration) *outbox.Deliverer {
	t.Helper()
	lane, err := st.Lane(context.Background(), "lane")
	if err != nil {
		t.Fatal(err)
	}
	prov, err := providers.NewWithSecrets(lane, secret, env.Clock)
	if err != nil {
		t.Fatal(err)
	}
	return &outbox.Deliverer{Store: st, Provider: prov, Lane: "lane", Holder: holder, Clock: env.Clock, LeaseTTL: ttl}
}
