package sqlstore_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// Migration 0020 rebuilds the outbox's audit so that it admits 'channel
// template': every action recorded before is kept, and an unknown action
// is still refused.
func TestChannelTemplateAuditMigrationKeepsTheActions(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		url := b.NewURL(t)
		env := sqltest.NewEnv(5)
		old, err := sqlstore.OpenUpToForTest(ctx, url, sqlstore.Options{Clock: env.Clock, IDs: env.IDs}, 19)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.SQL().ExecContext(ctx, `INSERT INTO outbox_lane_actions (id, lane, action, actor, detail, at)
			VALUES ('a1', 'hook', 'lane remove', 'ops', 'removed with 2 channel(s)', 5)`); err != nil {
			t.Fatal(err)
		}
		old.Close()

		db := sqltest.MustOpenURL(t, url, env)
		acts, err := db.Outbox().LaneActions(ctx, "hook", 10)
		if err != nil || len(acts) != 1 || acts[0].Action != "lane remove" || acts[0].Actor != "ops" || acts[0].Detail != "removed with 2 channel(s)" ||
			acts[0].At.UnixMilli() != 5 {
			t.Fatalf("actions after the migration: %+v %v", acts, err)
		}
		for action, ok := range map[string]bool{"channel template": true, "explode": false} {
			_, err := db.SQL().ExecContext(ctx, `INSERT INTO outbox_lane_actions (id, lane, action, actor, detail, at) VALUES ($1, 'hook', $2, 'ops', '', 6)`, "x"+action, action)
			if (err == nil) != ok {
				t.Errorf("action %q: %v, want accepted %v", action, err, ok)
			}
		}
	})
}
