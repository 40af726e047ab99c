package outbox_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// runHelper re-executes the test binary as a delivering process with the
// failpoints armed, and reports whether it was killed by SIGKILL.
func (h *harness) runHelper(failpoints string) (killed bool) {
	h.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "TM_DB_URL="+h.url, "TM_LANE="+h.lane, "TIDEMARK_FAILPOINTS="+failpoints)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	if err != nil {
		h.t.Fatalf("helper (%s): %v\n%s", failpoints, err, out)
	}
	return false
}

// TestCrashAtEachFailpointThenRecover kills a real delivering process at
// each outbox failpoint, then recovers in another process (this one) whose
// clock runs an hour ahead, so the crashed writer's lease has expired.
// Every intent must end landed exactly once or bucketed, with zero
// duplicates, as the provider's own count says.
func TestCrashAtEachFailpointThenRecover(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	for _, tc := range []struct {
		name    string
		crashes []string
		// sentBeforeRecovery is how many writes the provider holds when the
		// crashed processes are done.
		sentBeforeRecovery int
		openAttempt        bool
	}{
		{name: "after-journal", crashes: []string{"outbox.send.after-journal=crash@3"}, sentBeforeRecovery: 2, openAttempt: true},
		{name: "after-send", crashes: []string{"outbox.send.after-send=crash@3"}, sentBeforeRecovery: 3, openAttempt: true},
		{name: "mid-reconcile", crashes: []string{"outbox.send.after-send=crash@2", "outbox.reconcile.after-read=crash"}, sentBeforeRecovery: 2, openAttempt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
				h := newHarness(t, b, laneOpts{skew: time.Second, envClock: func(c *clock.Fake) { c.Set(time.Now().Add(time.Hour)) }})
				var ins []outbox.Intent
				for i, body := range []string{"one", "two", "three", "four", "five", "six"} {
					target := "room"
					if i == 3 {
						target = "locked"
					}
					ins = append(ins, h.draft(target, body))
				}
				h.srv.Moderate("locked", "locked by a moderator")
				for _, fp := range tc.crashes {
					if !h.runHelper(fp) {
						t.Fatalf("the helper was not killed at %s", fp)
					}
				}
				if got := h.srv.Count(); got != tc.sentBeforeRecovery {
					t.Fatalf("the provider holds %d writes after the crash, want %d", got, tc.sentBeforeRecovery)
				}
				lane, err := h.st.LaneDetail(context.Background(), h.lane)
				if err != nil {
					t.Fatal(err)
				}
				if (lane.InFlight != "") != tc.openAttempt {
					t.Fatalf("attempt in flight %q after the crash", lane.InFlight)
				}
				listed, probed := h.srv.Reads("writes"), h.srv.Reads("probe")
				d := h.deliverer("recovery")
				steps := h.runOnce(d)
				if steps[0].Kind != outbox.StepReconciled || steps[0].Requests != 1 {
					t.Fatalf("recovery's first step %+v: want one ordered read", steps[0])
				}
				if l, p := h.srv.Reads("writes")-listed, h.srv.Reads("probe")-probed; l != 1 || p != 0 {
					t.Fatalf("the provider served %d listings and %d probes during recovery, want one listing", l, p)
				}
				if n := len(steps[0].Plan.ReplayAlreadyLanded); n != 0 {
					t.Fatalf("plan replays %d landed intents", n)
				}
				h.assertExactlyOnce(ins)
				if got := h.intent(ins[3].ID); got.State != outbox.StateUnexecutable {
					t.Fatalf("the moderated intent is %s", got.State)
				}
				if h.srv.Count() != 5 {
					t.Fatalf("provider holds %d writes, want 5", h.srv.Count())
				}
			})
		})
	}
}
