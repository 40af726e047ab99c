package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A batch in which one source's fence holds but its run row is no longer
// active (a broken invariant) writes nothing as a batch: each run then
// settles on its own, the broken one is refused as stale with its source
// unmoved, and the others settle with one audit row each.
func TestSettleManyRefusesASourceWithoutItsRun(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		env := sqltest.NewEnv(5)
		db := sqltest.MustOpen(t, b, env)
		st := db.Ingest()
		var cs []tidemark.Claim
		var sts []ingest.Settlement
		for _, name := range []string{"a", "b", "c"} {
			src, err := st.AddSource(ctx, ingest.NewSource{Name: name, Kind: "git", Location: "x", Interval: time.Minute, RetryBudget: 3})
			if err != nil {
				t.Fatal(err)
			}
			c, err := st.Claim(ctx, src.ID, "w", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
			sts = append(sts, ingest.Settlement{Cursor: "after-" + name, NextDueAt: env.Clock.Now().Add(time.Hour)})
		}
		broken := cs[1]
		if _, err := db.SQL().ExecContext(ctx, `UPDATE ingest_runs SET status = 'failed' WHERE id = $1`, broken.RunID); err != nil {
			t.Fatal(err)
		}
		_, errs := st.SettleMany(ctx, cs, sts)
		for i, c := range cs {
			var audits int
			if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM ingest_audit WHERE run_id = $1`, c.RunID).Scan(&audits); err != nil {
				t.Fatal(err)
			}
			src, err := st.Source(ctx, c.SourceID)
			if err != nil {
				t.Fatal(err)
			}
			if c.RunID == broken.RunID {
				if !errors.Is(errs[i], tidemark.ErrStaleClaim) || audits != 0 || src.CursorVersion != c.CursorVersion || src.Cursor != c.Cursor {
					t.Fatalf("broken run: err %v, %d audit rows, cursor %q v%d; want stale, none, unmoved", errs[i], audits, src.Cursor, src.CursorVersion)
				}
				continue
			}
			if errs[i] != nil || audits != 1 || src.CursorVersion != c.CursorVersion+1 || src.Cursor != sts[i].Cursor {
				t.Fatalf("run %d: err %v, %d audit rows, cursor %q v%d; want settled once", i, errs[i], audits, src.Cursor, src.CursorVersion)
			}
		}
	})
}
