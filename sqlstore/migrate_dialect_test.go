package sqlstore_test

import (
	"testing"

	"github.com/tidemark/tidemark/sqlstore"
)

// TestMigrationsPerDialect: a version may be a pair of files, one per
// dialect, under one name; the loader keeps both and tags each.
func TestMigrationsPerDialect(t *testing.T) {
	ms, err := sqlstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range ms {
		if m.Version == 9 {
			got[m.Dialect] = m.Name == "search"
		}
	}
	if len(got) != 2 || !got["sqlite"] || !got["postgres"] {
		t.Fatalf("migration 9: %v", got)
	}
}
