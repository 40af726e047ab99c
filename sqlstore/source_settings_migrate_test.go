package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// Migration 0015 rebuilds source_actions so that it admits 'set': the
// actions recorded before are kept, the table still refuses an unknown
// action (and, until 0017, a dangling source); and the workers' records that they could
// not serve a source are kept, expired.
func TestSourceSettingsMigrationKeepsTheActions(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		url := b.NewURL(t)
		env := sqltest.NewEnv(5)
		old, err := sqlstore.OpenUpToForTest(ctx, url, sqlstore.Options{Clock: env.Clock, IDs: env.IDs}, 12)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`INSERT INTO sources (id, name, kind, location, interval_ms, retry_budget, cursor, cursor_version, next_due_at, created_at, updated_at)
				VALUES ('src1', 'docs', 'dir', '/mnt/docs', 60000, 3, 'c7', 7, 0, 1, 1)`,
			`INSERT INTO source_actions (id, source_id, action, actor, cursor_before, cursor_after, cursor_version_before, cursor_version_after, note, at)
				VALUES ('a1', 'src1', 'skip', 'ops', 'c6', 'c7', 6, 7, 'upstream rewrote history', 5)`,
			`INSERT INTO source_unserved (source_id, holder, reason, at) VALUES ('src1', 'w1', 'directory not found', 6)`,
		} {
			if _, err := old.SQL().ExecContext(ctx, q); err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
		}
		old.Close()

		db := sqltest.MustOpenURL(t, url, env)
		st := db.Ingest()
		acts, err := st.Actions(ctx, "docs", 10)
		if err != nil || len(acts) != 1 || acts[0].ID != "a1" || acts[0].Action != "skip" || acts[0].Note != "upstream rewrote history" ||
			acts[0].CursorVersionAfter != 7 || acts[0].At.UnixMilli() != 5 {
			t.Fatalf("actions after the migration: %+v %v", acts, err)
		}
		us, err := st.Unserved(ctx, "src1")
		if err != nil || len(us) != 1 || us[0].Holder != "w1" || us[0].Until.UnixMilli() != 0 {
			t.Fatalf("unserved after the migration: %+v %v", us, err)
		}
		// Expired: w1 claims the source.
		if cs, err := st.ClaimDue(ctx, "w1", time.Minute, 1); err != nil || len(cs) != 1 {
			t.Fatalf("w1 claims %+v %v", cs, err)
		}
		// 0017 admits rename and remove, and lets the audit of a removed
		// source outlive it (source_id references no source): an unknown
		// action is what the table still refuses.
		for _, q := range []string{
			`INSERT INTO source_actions (id, source_id, action, actor, cursor_before, cursor_after, cursor_version_before, cursor_version_after, at)
				VALUES ('a8', 'src1', 'explode', 'ops', 'c7', 'c7', 7, 7, 9)`,
		} {
			if _, err := db.SQL().ExecContext(ctx, q); err == nil {
				t.Fatalf("the rebuilt table accepted:\n%s", q)
			}
		}
		allow := true
		if _, err := st.Set(ctx, "docs", ingest.Settings{AllowPrivate: &allow}, "ops"); err != nil {
			t.Fatal(err)
		}
		if acts, err := st.Actions(ctx, "docs", 10); err != nil || len(acts) != 2 || acts[0].Action != "set" {
			t.Fatalf("actions after set: %+v %v", acts, err)
		}
	})
}
