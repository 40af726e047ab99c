package feed_test

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/tidemark/tidemark/fetch/feed"
)

// FuzzParse feeds arbitrary documents to the parser: it must never panic,
// every item it admits must have a key, and parsing is deterministic.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/seed/*")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(rss(rssItem("a", "A", "x"))))
	f.Add([]byte(`{"version":"https://jsonfeed.org/version/1.1","title":"J","items":[{"id":"1"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		items, err := feed.Parse(b, "", "https://example.org/feed", 1000)
		if err != nil {
			return
		}
		again, err := feed.Parse(b, "", "https://example.org/feed", 1000)
		if err != nil || len(again) != len(items) {
			t.Fatalf("second parse differs: %v", err)
		}
		seen := map[string]bool{}
		for i, it := range items {
			if it.Key == "" || seen[it.Key] {
				t.Fatalf("item %d: empty or repeated key %q", i, it.Key)
			}
			seen[it.Key] = true
			if !utf8.Valid(it.Evidence) || it.EvidenceHash() != again[i].EvidenceHash() {
				t.Fatalf("item %d: evidence not canonical", i)
			}
		}
	})
}
