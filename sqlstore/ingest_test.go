package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/storetest"
)

func TestIngestConformance(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		storetest.Ingest(t, func(t *testing.T) storetest.Harness {
			env := sqltest.NewEnv(1)
			db := sqltest.MustOpen(t, b, env)
			count := func(t *testing.T, q, arg string) int {
				t.Helper()
				var n int
				if err := db.SQL().QueryRowContext(context.Background(), q, arg).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			return storetest.Harness{
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

// A path with URI metacharacters opens the file it names, not a prefix
// of it.
func TestOpenOddPath(t *testing.T) {
	dir := t.TempDir()
	env := sqltest.NewEnv(1)
	a := sqltest.MustOpenURL(t, "sqlite:"+dir+"/a#1?x=y%20.db", env)
	b := sqltest.MustOpenURL(t, "sqlite:"+dir+"/a", env)
	if _, err := a.Ingest().AddSource(context.Background(), ingest.NewSource{Name: "s", Kind: "git", Location: "x", Interval: time.Minute, RetryBudget: 1}); err != nil {
		t.Fatal(err)
	}
	srcs, err := b.Ingest().Sources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 0 {
		t.Fatal("two different paths opened the same database")
	}
}
