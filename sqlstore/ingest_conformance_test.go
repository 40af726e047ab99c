package sqlstore_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/ingest/ingesttest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func TestIngestConformance(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ingesttest.Run(t, func(t *testing.T) ingesttest.Harness {
			env := sqltest.NewEnv(1)
			db, err := sqlstore.Open(context.Background(), b.NewURL(t), sqlstore.Options{Clock: env.Clock, IDs: env.IDs, SourceKey: ingesttest.Key})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			count := func(t *testing.T, q, arg string) int {
				t.Helper()
				var n int
				if err := db.SQL().QueryRowContext(context.Background(), q, arg).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			return ingesttest.Harness{
				Store: db.Ingest(),
				Clock: env.Clock,
				AuditRows: func(t *testing.T, runID string) int {
					return count(t, `SELECT COUNT(*) FROM ingest_audit WHERE run_id = $1`, runID)
				},
				ActiveRuns: func(t *testing.T, sourceID string) int {
					return count(t, `SELECT COUNT(*) FROM ingest_runs WHERE source_id = $1 AND status = 'active'`, sourceID)
				},
			}
		})
	})
}
