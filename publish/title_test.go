package publish_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A listing shows a long title shortened at a word boundary, with an
// ellipsis; a title that fits is shown as it is.
func TestListTitle(t *testing.T) {
	words := strings.Repeat("refactor the pipeline ", 20) // 440 characters
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "Fix the lease renewal", "Fix the lease renewal"},
		{"exactly the limit", strings.Repeat("a", publish.MaxListTitle), strings.Repeat("a", publish.MaxListTitle)},
		{"words cut at a space", words, strings.TrimSpace(words[:132]) + "…"},
		{"unbroken text cut inside", strings.Repeat("x", 3000), strings.Repeat("x", publish.MaxListTitle-1) + "…"},
		{"characters, not bytes", strings.Repeat("é", 200), strings.Repeat("é", publish.MaxListTitle-1) + "…"},
		{"no dangling punctuation", strings.Repeat("word, ", 30), strings.TrimRight(strings.Repeat("word, ", 23), ", ") + "…"},
		{"a long word late in the title", "Fix " + strings.Repeat("y", 300), "Fix " + strings.Repeat("y", publish.MaxListTitle-5) + "…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := publish.ListTitle(tc.in)
			if got != tc.want {
				t.Errorf("ListTitle(%.40q…) = %q, want %q", tc.in, got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n > publish.MaxListTitle {
				t.Errorf("ListTitle is %d characters, more than %d", n, publish.MaxListTitle)
			}
			if !utf8.ValidString(got) {
				t.Errorf("ListTitle cut a character in two: %q", got)
			}
		})
	}
}

// The index, a source's card, the feeds and a change page's neighbour
// links show a 3,000-character title shortened, the full title in the
// link's title attribute; the change page's own heading shows it whole.
func TestListingsShortenLongTitles(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		long := strings.Repeat("x", 3000)
		f.settle(t, f.src, tidemark.Item{Key: "c1", Title: long, Evidence: []byte("commit c1\n\n    " + long + "\n")},
			tidemark.Item{Key: "c2", Title: "Short one", Evidence: []byte("commit c2\n\n    Short one\n")})
		f.mustSummarizeAndPublish(t)
		get := func(key string) string {
			t.Helper()
			o, err := f.objs.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			return string(o.Body)
		}
		short := publish.ListTitle(long)
		link := `title="` + long + `">` + short + `</a>`
		for _, key := range []string{publish.IndexKey, publish.CardKey(f.src.ID)} {
			if body := get(key); !strings.Contains(body, link) || strings.Contains(body, ">"+long+"<") {
				t.Errorf("%s does not list the long title shortened with the full one as the link's title", key)
			}
		}
		for _, key := range []string{publish.FeedKey, publish.CardFeedKey(f.src.ID)} {
			if body := get(key); !strings.Contains(body, `<title type="text">`+short+`</title>`) {
				t.Errorf("%s: the entry's title is not the shortened one", key)
			}
		}
		if body := get("changes/" + mustPageOf(t, f, "c2") + ".html"); !strings.Contains(body, `rel="prev" title="`+long+`">← `+short+`</a>`) {
			t.Errorf("the neighbour link to the long change does not show it shortened")
		}
		if body := get("changes/" + mustPageOf(t, f, "c1") + ".html"); !strings.Contains(body, "<h1>"+long+"</h1>") {
			t.Errorf("the long change's page does not show its full title")
		}
	})
}

// The search page lists a long title shortened too.
func TestSearchShortensLongTitles(t *testing.T) {
	long := strings.Repeat("y", 3000)
	body, err := publish.RenderSearch("y", publish.SearchResult{Query: "y", Limit: 10, Hits: []publish.SearchHit{{PageID: "P", Title: long, URL: "changes/P.html"}}}, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `title="`+long+`">`+publish.ListTitle(long)+`</a>`) {
		t.Errorf("the search page does not list the long title shortened:\n%.2000s", body)
	}
}
