package sqlstore_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// Migrations 0038 and 0039 start a lane's total of failed steps from the
// run it is failing when the upgrade finds it failing: a total is never
// below the run of failures in a row it contains. A database that applied
// 0038 alone (which started every total at 0) is mended by 0039 the same
// way; a total above the run is left as it is.
func TestFailedStepsMigrationCountsTheRunAlreadyFailing(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		url := b.NewURL(t)
		env := sqltest.NewEnv(5)
		old, err := sqlstore.OpenUpToForTest(ctx, url, sqlstore.Options{Clock: env.Clock, IDs: env.IDs}, 37)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []struct {
			name     string
			failures int
		}{{"down", 4}, {"fine", 0}} {
			var since any
			if l.failures > 0 {
				since = 1000
			}
			if _, err := old.SQL().ExecContext(ctx, `INSERT INTO outbox_lanes (name, provider, min_gap_ms, skew_ms, retire_spacing_ms, created_at, updated_at, failing_since, failed_at, failures, last_failure)
				VALUES ($1, 'webhook', 0, 0, 0, 1, 1, $2, $2, $3, 'refused')`, l.name, since, l.failures); err != nil {
				t.Fatal(err)
			}
		}
		old.Close()
		// As 0038 alone left it: every total at 0, and one lane's total
		// already counting past its run (it failed since, and recovered).
		mid, err := sqlstore.OpenUpToForTest(ctx, url, sqlstore.Options{Clock: env.Clock, IDs: env.IDs}, 38)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mid.SQL().ExecContext(ctx, `INSERT INTO outbox_lanes (name, provider, min_gap_ms, skew_ms, retire_spacing_ms, created_at, updated_at, failing_since, failed_at, failures, last_failure, failed_steps)
			VALUES ('counted', 'webhook', 0, 0, 0, 1, 1, 1000, 1000, 2, 'refused', 9)`); err != nil {
			t.Fatal(err)
		}
		mid.Close()

		db := sqltest.MustOpenURL(t, url, env)
		for name, want := range map[string]int{"down": 4, "fine": 0, "counted": 9} {
			var got int
			if err := db.SQL().QueryRowContext(ctx, `SELECT failed_steps FROM outbox_lanes WHERE name = $1`, name).Scan(&got); err != nil || got != want {
				t.Errorf("lane %s: failed_steps %d after the migration (%v), want %d", name, got, err, want)
			}
		}
	})
}
