package publish_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// TestSearch: published pages are found by title, summary and evidence
// text, ranked and paginated; an edited title is what search shows; a
// withdrawn page leaves the index; queries that are not queries are
// invalid, never a store error.
func TestSearch(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		over := fakeOverrides{}
		f.svc.Overrides = over
		f.settle(t, f.src,
			tidemark.Item{Key: "a", Title: "fix the tidal gauge", Evidence: []byte("commit a\n\n    fix the tidal gauge\n    \n    Calibrates the harbour sensor.\n")},
			tidemark.Item{Key: "b", Title: "docs: harbour map", Evidence: []byte("commit b\n\n    docs: harbour map\n")},
			tidemark.Item{Key: "c", Title: "unrelated", Evidence: []byte("commit c\n\n    unrelated\n")})
		evA := mustEventOf(t, f, "a")
		over[evA] = publish.Override{Title: "Gauge calibration fixed"}
		f.mustSummarizeAndPublish(t)
		pa := mustPageOf(t, f, "a")
		// The edited title is the one the listings and feeds show.
		for _, key := range []string{publish.IndexKey, publish.CardKey(f.src.ID), publish.FeedKey, publish.CardFeedKey(f.src.ID)} {
			o, err := f.objs.Get(ctx, key)
			if err != nil || contains(o.Body, "fix the tidal gauge</") || !contains(o.Body, "Gauge calibration fixed") {
				t.Fatalf("%s does not show the edited title: %v\n%s", key, err, o.Body)
			}
		}
		search := func(q string, limit, offset int) publish.SearchResult {
			t.Helper()
			pq, err := publish.ParseSearch(q, limit, offset)
			if err != nil {
				t.Fatalf("parse %q: %v", q, err)
			}
			res, err := f.st.Search(ctx, pq)
			if err != nil {
				t.Fatalf("search %q: %v", q, err)
			}
			return res
		}
		res := search("harbour", 10, 0)
		if len(res.Hits) != 2 || res.More {
			t.Fatalf("harbour: %+v", res)
		}
		res = search("sensor", 10, 0) // only in the evidence's body
		if len(res.Hits) != 1 || res.Hits[0].PageID != pa || res.Hits[0].Title != "Gauge calibration fixed" {
			t.Fatalf("sensor: %+v", res)
		}
		var marked bool
		for _, p := range res.Hits[0].Snippet {
			marked = marked || p.Match && strings.EqualFold(p.Text, "sensor")
		}
		if !marked {
			t.Errorf("snippet does not mark the match: %+v", res.Hits[0].Snippet)
		}
		if res := search("harbour -map", 10, 0); len(res.Hits) != 1 || res.Hits[0].PageID != pa {
			t.Fatalf("exclusion: %+v", res)
		}
		if res := search(`"harbour map"`, 10, 0); len(res.Hits) != 1 || res.Hits[0].PageID == pa {
			t.Fatalf("phrase: %+v", res)
		}
		first, second := search("harbour", 1, 0), search("harbour", 1, 1)
		if len(first.Hits) != 1 || !first.More || len(second.Hits) != 1 || second.More || first.Hits[0].PageID == second.Hits[0].PageID {
			t.Fatalf("pagination: %+v %+v", first, second)
		}
		// Characters that are FTS syntax are searched as text.
		for _, q := range []string{`harbour"`, `harbour AND OR NOT`, `(harbour`, `harbour*`, `title:harbour`, `NEAR(harbour`} {
			pq, err := publish.ParseSearch(q, 10, 0)
			if err != nil {
				t.Fatalf("parse %q: %v", q, err)
			}
			if _, err := f.st.Search(ctx, pq); err != nil {
				t.Errorf("search %q: %v", q, err)
			}
		}
		for _, q := range []string{"", "   ", "-harbour", `"harbour`, "***", strings.Repeat("x", publish.MaxSearchQuery+1)} {
			if _, err := publish.ParseSearch(q, 10, 0); !errors.Is(err, tidemark.ErrInvalid) {
				t.Errorf("query %q: %v, want invalid", q, err)
			}
		}
		// Republished with a new title: the index holds the new one only.
		over[evA] = publish.Override{Title: "Gauge repaired"}
		if _, err := f.svc.Publish(ctx, mustCurrent(t, f, "a")); err != nil {
			t.Fatal(err)
		}
		if res := search("calibration", 10, 0); len(res.Hits) != 0 {
			t.Fatalf("the old title is still indexed: %+v", res)
		}
		if res := search("repaired", 10, 0); len(res.Hits) != 1 || res.Hits[0].Title != "Gauge repaired" {
			t.Fatalf("the new title is not indexed: %+v", res)
		}
		// Withdrawn: rejected and swept, the page leaves the index.
		sums, err := f.st.Summaries(ctx, publish.SummaryFilter{EventID: evA})
		if err != nil || len(sums) == 0 {
			t.Fatal(sums, err)
		}
		if _, err := f.st.Reject(ctx, sums[0].ID, "wrong"); err != nil {
			t.Fatal(err)
		}
		if rep, err := f.svc.Sweep(ctx); err != nil || rep.Withdrawn != 1 {
			t.Fatalf("sweep: %+v %v", rep, err)
		}
		if res := search("sensor", 10, 0); len(res.Hits) != 0 {
			t.Fatalf("withdrawn page still found: %+v", res)
		}
	})
}

type fakeOverrides map[string]publish.Override

func (o fakeOverrides) PageOverride(ctx context.Context, eventID string) (publish.Override, bool, error) {
	v, ok := o[eventID]
	return v, ok, nil
}

func mustEventOf(t *testing.T, f *fixture, key string) string {
	t.Helper()
	var id string
	if err := f.db.SQL().QueryRowContext(context.Background(), `SELECT id FROM events WHERE item_key = $1`, key).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestParseSearchRefusesAPageOutOfRange: a limit outside 1 to
// MaxSearchLimit, or a negative offset, is invalid and says the allowed
// range, never quietly replaced by another number.
func TestParseSearchRefusesAPageOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		limit, offset int
		want          string // "" when valid
	}{
		{1, 0, ""},
		{publish.MaxSearchLimit, 40, ""},
		{0, 0, "from 1 to 100"},
		{-1, 0, "from 1 to 100"},
		{publish.MaxSearchLimit + 1, 0, "from 1 to 100"},
		{1000, 0, "from 1 to 100"},
		{10, -1, "0 or more"},
	} {
		q, err := publish.ParseSearch("tide", tc.limit, tc.offset)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("limit %d offset %d: %v", tc.limit, tc.offset, err)
		case tc.want == "" && (q.Limit != tc.limit || q.Offset != tc.offset):
			t.Errorf("limit %d offset %d: parsed as limit %d offset %d", tc.limit, tc.offset, q.Limit, q.Offset)
		case tc.want != "" && (!errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("limit %d offset %d: %v, want invalid saying %q", tc.limit, tc.offset, err, tc.want)
		}
	}
}

// A word is a word wherever it stands: inside what looks like an HTML tag
// (a generic type, an escaped <script>), in a file path, or before a
// file's extension, SQLite and PostgreSQL find the same pages.
func TestSearchFindsWordsInTagsAndPaths(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		f.settle(t, f.src,
			tidemark.Item{Key: "a", Title: "fix Option<String> parsing", Evidence: []byte("commit a\n\n outbox/outboxtest/outboxtest.go | 12 +\n")},
			tidemark.Item{Key: "b", Title: "web: escape <script>alert(1)</script> in titles", Evidence: []byte("commit b\n\n web/webhook.go | 3 +\n")})
		f.mustSummarizeAndPublish(t)
		for q, want := range map[string]int{"String": 1, "outboxtest": 1, "outboxtest.go": 1, "alert": 1, "script": 1,
			"webhook.go": 1, "webhook": 1, "Option<String>": 1, "outbox/outboxtest": 1} {
			pq, err := publish.ParseSearch(q, 10, 0)
			if err != nil {
				t.Fatalf("parse %q: %v", q, err)
			}
			res, err := f.st.Search(ctx, pq)
			if err != nil || len(res.Hits) != want {
				t.Errorf("%s: search %q: %d hits (%v), want %d", b.Name, q, len(res.Hits), err, want)
			}
		}
	})
}

// An editor's title is cleaned as an upstream one is (a bidirectional
// override would reverse it on the wiki), and an editor's notes keep their
// paragraphs: a blank line starts one.
func TestAnEditedPageIsCleanedAndKeepsItsParagraphs(t *testing.T) {
	ctx := context.Background()
	f := mustFixture(t, sqltest.Backends()[0], mem.New())
	over := fakeOverrides{}
	f.svc.Overrides = over
	f.settle(t, f.src, tidemark.Item{Key: "a", Title: "fix the gauge", Evidence: []byte("commit a\n")})
	ev := mustEventOf(t, f, "a")
	over[ev] = publish.Override{Title: "Edited \u202etitle\u202c", Notes: "First line\nsecond line\n\nSecond paragraph"}
	f.mustSummarizeAndPublish(t)
	o, err := f.objs.Get(ctx, publish.PageKey(mustPageOf(t, f, "a")))
	if err != nil {
		t.Fatal(err)
	}
	body := string(o.Body)
	if strings.ContainsAny(body, "\u202e\u202c") || !strings.Contains(body, "Edited title") {
		t.Errorf("the edited title is not cleaned:\n%s", body)
	}
	if !strings.Contains(body, "<p>First line\nsecond line</p>") || !strings.Contains(body, "<p>Second paragraph</p>") {
		t.Errorf("the notes lost their paragraphs:\n%s", body)
	}
}
