package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A daemon announcing itself learns of the other live instances under its
// holder (a copied unit file: two processes with one --holder), and of no
// other holder's, and of none gone stale or withdrawn.
func TestPresenceFindsAnotherLiveInstanceOfTheHolder(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(12)
		db := sqltest.MustOpen(t, b, env)
		at := func(holder, instance string, pid int) ingest.Presence {
			return ingest.Presence{Holder: holder, Instance: instance, Host: "vm", PID: pid, StartedAt: sqltest.Epoch, SeenAt: env.Clock.Now()}
		}
		announce := func(p ingest.Presence) []ingest.Presence {
			t.Helper()
			others, err := db.Announce(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			return others
		}
		if others := announce(at("wA", "one", 10)); len(others) != 0 {
			t.Fatalf("the first daemon found %+v", others)
		}
		if others := announce(at("wB", "three", 12)); len(others) != 0 {
			t.Fatalf("another holder's daemon found %+v", others)
		}
		others := announce(at("wA", "two", 11))
		if len(others) != 1 || others[0].Instance != "one" || others[0].PID != 10 || others[0].Host != "vm" || !others[0].StartedAt.Equal(sqltest.Epoch) {
			t.Fatalf("the second daemon under wA found %+v, want the first", others)
		}
		env.Clock.Advance(ingest.PresenceStale + time.Second)
		if others := announce(at("wA", "two", 11)); len(others) != 0 {
			t.Fatalf("a stale presence was taken for a live one: %+v", others)
		}
		if others := announce(at("wA", "one", 10)); len(others) != 1 || others[0].Instance != "two" {
			t.Fatalf("the first daemon found %+v, want the second", others)
		}
		if err := db.Withdraw(ctx, "wA", "two"); err != nil {
			t.Fatal(err)
		}
		if others := announce(at("wA", "one", 10)); len(others) != 0 {
			t.Fatalf("a withdrawn presence was found: %+v", others)
		}
	})
}
