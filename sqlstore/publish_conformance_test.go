package sqlstore_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/publish/publishtest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func TestPublishConformance(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		publishtest.Run(t, func(t *testing.T) publishtest.Harness {
			env := sqltest.NewEnv(1)
			db := sqltest.MustOpen(t, b, env)
			return publishtest.Harness{Store: db.Publish(), Ingest: db.Ingest(), Clock: env.Clock,
				MarkingWith: func(write func(context.Context, tidemark.Publication) error) publish.Store {
					return db.Publish().WithHooks(func(ctx context.Context, _ *sql.Tx, p tidemark.Publication) error { return write(ctx, p) })
				}}
		})
	})
}
