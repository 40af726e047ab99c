package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
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

// Every time the text forms print is in UTC and says so, though the
// terminal's zone (TZ) is another; --json is what it was.
func TestTextTimesAreUTC(t *testing.T) {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no zone database: %v", err)
	}
	old := time.Local
	time.Local = loc
	t.Cleanup(func() { time.Local = old })

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
	due := time.Date(2031, 7, 1, 2, 3, 4, 0, time.UTC)
	if _, err := st.Settle(ctx, c, ingest.Settlement{Items: []tidemark.Item{{Key: "k", Title: "t", Evidence: []byte("e")}},
		Cursor: "c1", Declared: 1, NextDueAt: due}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	stamp := regexp.MustCompile(`\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?`)
	for _, args := range [][]string{{"source", "list"}, {"source", "show", "s"}, {"runs", "list"}, {"events", "list"}} {
		out := mustTidemark(t, 0, append([]string{"--home", home}, args...)...)
		locs := stamp.FindAllStringIndex(out, -1)
		if len(locs) == 0 {
			t.Errorf("tidemark %s shows no time:\n%s", strings.Join(args, " "), out)
		}
		for _, l := range locs {
			if !strings.HasPrefix(out[l[1]:], " UTC") {
				t.Errorf("tidemark %s shows %q without saying UTC:\n%s", strings.Join(args, " "), out[l[0]:l[1]], out)
			}
		}
		if args[1] != "show" {
			continue
		}
		if !strings.Contains(out, "2031-07-01 02:03:04 UTC") {
			t.Errorf("source show lacks next due 2031-07-01 02:03:04 UTC:\n%s", out)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(mustTidemark(t, 0, append(append([]string{"--home", home}, args...), "--json")...)), &got); err != nil {
			t.Fatal(err)
		}
		if got["next_due_at"] != "2031-07-01T02:03:04Z" {
			t.Errorf("--json next_due_at = %v, want 2031-07-01T02:03:04Z", got["next_due_at"])
		}
	}
}
