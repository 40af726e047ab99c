package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A lane's failing deliveries are kept with it, so every process (lane
// show, the console) sees them: since when, how many in a row, and the
// latest; a delivery that goes through clears them.
func TestLaneFailuresAreKeptUntilADeliveryGoesThrough(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		env := sqltest.NewEnv(11)
		st := sqltest.MustOpen(t, b, env).Outbox()
		if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "hooks", Provider: "webhook"}}); err != nil {
			t.Fatal(err)
		}
		lane := func() outbox.Lane {
			t.Helper()
			l, err := st.LaneDetail(ctx, "hooks")
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		if l := lane(); l.Failing != nil {
			t.Fatalf("a new lane is failing: %+v", l.Failing)
		}
		first := env.Clock.Now()
		if err := st.RecordLaneFailure(ctx, "hooks", first, "count before: connection refused"); err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(time.Minute)
		if err := st.RecordLaneFailure(ctx, "hooks", env.Clock.Now(), "count before: connection reset"); err != nil {
			t.Fatal(err)
		}
		f := lane().Failing
		if f == nil || !f.Since.Equal(first) || !f.At.Equal(env.Clock.Now()) || f.Failures != 2 || f.Last != "count before: connection reset" {
			t.Fatalf("failing after two failures: %+v, want since %s, 2 in a row, the latest", f, first)
		}
		if err := st.ClearLaneFailure(ctx, "hooks"); err != nil {
			t.Fatal(err)
		}
		if l := lane(); l.Failing != nil {
			t.Fatalf("failing after a delivery went through: %+v", l.Failing)
		}
		if err := st.RecordLaneFailure(ctx, "nope", first, "x"); !errors.Is(err, tidemark.ErrNotFound) {
			t.Fatalf("a failure of no lane: %v, want not found", err)
		}
	})
}
