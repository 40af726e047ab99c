package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// Migration 0035 upgrades a database that already holds two sources of
// one location (added before source add refused it): the upgrade does not
// fail, both sources are kept as they were, names and all, and keep no
// key; a source added after it holds its key, against later adds.
func TestSourceKeyMigrationKeepsEarlierDuplicates(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		url := b.NewURL(t)
		env := sqltest.NewEnv(5)
		old, err := sqlstore.OpenUpToForTest(ctx, url, sqlstore.Options{Clock: env.Clock, IDs: env.IDs}, 34)
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range []string{"blog", "blog-2"} {
			if _, err := old.SQL().ExecContext(ctx, `INSERT INTO sources (id, name, kind, location, config, interval_ms, retry_budget, next_due_at, created_at, updated_at)
				VALUES ($1, $2, 'feed', 'https://example.com/feed.xml', '{}', 60000, 3, 0, $3, $3)`, "src"+name, name, i+1); err != nil {
				t.Fatal(err)
			}
		}
		old.Close()

		db := sqltest.MustOpenURL(t, url, env)
		st := db.Ingest()
		srcs, err := st.Sources(ctx)
		if err != nil || len(srcs) != 2 || srcs[0].Name != "blog" || srcs[1].Name != "blog-2" {
			t.Fatalf("sources after the migration: %+v %v", srcs, err)
		}
		var keyed int
		if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM sources WHERE source_key IS NOT NULL`).Scan(&keyed); err != nil || keyed != 0 {
			t.Fatalf("%d earlier sources were given a key (%v), want none", keyed, err)
		}
		add := func(name string) error {
			_, err := st.AddSource(ctx, ingest.NewSource{Name: name, Kind: "feed", Location: "https://example.com/other.xml",
				Key: "k-other", Interval: time.Minute, RetryBudget: 3})
			return err
		}
		if err := add("other"); err != nil {
			t.Fatal(err)
		}
		var dup *ingest.DuplicateError
		if err := add("other-2"); !errors.Is(err, tidemark.ErrConflict) || !errors.As(err, &dup) || dup.Source.Name != "other" {
			t.Fatalf("a second source of a key after the migration: %v", err)
		}
	})
}
