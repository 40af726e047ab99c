package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore"
)

// An upstream title with escape sequences is printed escaped by the text
// listing and exactly, JSON-escaped, by --json.
func TestUpstreamTextIsEscaped(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(home, "tidemark.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := db.Ingest()
	src, err := st.AddSource(ctx, ingest.NewSource{Name: "s", Kind: "git", Location: "x", Interval: time.Minute, RetryBudget: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Claim(ctx, src.ID, "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const title = "\x1b]0;pwned\x07\x1b[2Jcleared"
	if _, err := st.Settle(ctx, c, ingest.Settlement{Items: []tidemark.Item{{Key: "k", Title: title, Evidence: []byte("e")}},
		Cursor: "c1", Declared: 1, NextDueAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	out := mustTidemark(t, 0, "--home", home, "events", "list")
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `\x1b]0;pwned\x07\x1b[2Jcleared`) {
		t.Fatalf("title not escaped: %q", out)
	}
	var evs []tidemark.Event
	if err := json.Unmarshal([]byte(mustTidemark(t, 0, "--home", home, "events", "list", "--json")), &evs); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Title != title {
		t.Fatalf("--json title %+v, want %q", evs, title)
	}
}
