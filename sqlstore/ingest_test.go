package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

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
