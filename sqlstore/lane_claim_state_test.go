package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A lane's lease is read with the state of its claim, by the rule a
// source's claim is (ingest.Liveness.ClaimState): running while it
// stands, gone when its holder is a process of this host that is no
// longer running, expired once its lease ran out; "" with no writer.
func TestLaneLeaseIsReadWithItsClaimState(t *testing.T) {
	ctx := context.Background()
	dead := map[int]bool{41: true}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		env := sqltest.NewEnv(5)
		db := mustOpenLive(t, b, env, &ingest.Liveness{Host: "box", Alive: func(pid int) bool { return !dead[pid] }})
		st := db.Outbox()
		for _, name := range []string{"idle", "live", "dead", "late"} {
			if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: name, Provider: "webhook",
				Settings: map[string]string{"url": "https://x.example/"}}}); err != nil {
				t.Fatal(err)
			}
		}
		for lane, holder := range map[string]string{"live": "box:42", "dead": "box:41"} {
			if _, err := st.Acquire(ctx, lane, holder, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.Acquire(ctx, "late", "box:43", time.Minute); err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(2 * time.Minute)
		want := map[string]tidemark.ClaimState{"idle": "", "live": tidemark.ClaimRunning, "dead": tidemark.ClaimGone, "late": tidemark.ClaimExpired}
		lanes, err := st.Lanes(ctx)
		if err != nil || len(lanes) != len(want) {
			t.Fatalf("lanes: %v %v", lanes, err)
		}
		for _, l := range lanes {
			if l.ClaimState != want[l.Name] {
				t.Errorf("lanes: %s (holder %q) claim_state %q, want %q", l.Name, l.LeaseHolder, l.ClaimState, want[l.Name])
			}
			d, err := st.LaneDetail(ctx, l.Name)
			if err != nil || d.ClaimState != want[l.Name] {
				t.Errorf("lane detail %s: claim_state %q (%v), want %q", l.Name, d.ClaimState, err, want[l.Name])
			}
		}
	})
}
