package publish_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// PublishPending's report counts a publication that lost the race as
// failed, and its repair as repaired or, when the repair's write fails
// too, as a failed repair: the counts a process exports as metrics.
func TestPublishPendingCountsRepairs(t *testing.T) {
	for _, repairFails := range []bool{false, true} {
		name := map[bool]string{false: "repaired", true: "repair-failed"}[repairFails]
		t.Run(name, func(t *testing.T) {
			sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
				ctx := context.Background()
				objs := mem.New()
				f := mustFixture(t, b, objs)
				ev := f.mustEvent(t, "c1", "change", "evidence")
				f.mustAccept(t, ev, "Older summary.", "m1")
				var fired atomic.Bool
				objs.SetHooks(mem.Hooks{BeforePut: func(ctx context.Context, key string, body []byte, opt objstore.PutOptions) error {
					if !strings.HasPrefix(key, "changes/") {
						return nil
					}
					if strings.Contains(string(body), "Older summary.") && fired.CompareAndSwap(false, true) {
						f.mustAccept(t, ev, "Newer summary.", "m2")
					}
					if repairFails && strings.Contains(string(body), "Newer summary.") {
						return errors.New("disk full")
					}
					return nil
				}})
				rep, err := f.svc.PublishPending(ctx, 10)
				if err != nil {
					t.Fatal(err)
				}
				if !fired.Load() {
					t.Fatal("hook never fired")
				}
				want := [3]int{1, 1, 0} // failed, repaired, repair failed
				if repairFails {
					want = [3]int{1, 0, 1}
				}
				if got := [3]int{rep.Failed, rep.Repaired, rep.RepairFailed}; got != want {
					t.Fatalf("failed, repaired, repair failed = %v, want %v (%+v)", got, want, rep)
				}
			})
		})
	}
}
