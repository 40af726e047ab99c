package sqlstore_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A channel change that cannot be audited is not made: the channel and its
// audit row are written in one transaction, for an add as for a template
// or a removal.
func TestChannelChangesThatCannotBeAuditedAreNotMade(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := sqltest.MustOpen(t, b, sqltest.NewEnv(3))
		ob := db.Outbox()
		mustAddSource(t, db.Ingest(), "docs")
		if _, err := ob.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "hook", Provider: "webhook", Settings: map[string]string{"url": "http://127.0.0.1:1/"}}}); err != nil {
			t.Fatal(err)
		}
		c, err := ob.AddChannelAs(ctx, "ada", "docs", "hook", "room", "")
		if err != nil {
			t.Fatal(err)
		}
		// The audit's table refuses every row from now on.
		if _, err := db.SQL().ExecContext(ctx, `ALTER TABLE outbox_lane_actions RENAME TO outbox_lane_actions_gone`); err != nil {
			t.Fatal(err)
		}
		if _, err := ob.AddChannelAs(ctx, "ada", "docs", "hook", "other room", ""); err == nil {
			t.Fatal("a channel was added without its audit")
		}
		if _, err := ob.SetChannelTemplate(ctx, c.ID, "{{.Title}}", "ada"); err == nil {
			t.Fatal("a template was set without its audit")
		}
		cs, err := ob.Channels(ctx)
		if err != nil || len(cs) != 1 || cs[0].ID != c.ID || cs[0].Template != "" {
			t.Fatalf("channels after the refused changes: %+v, %v", cs, err)
		}
	})
}
