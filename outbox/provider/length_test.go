package provider_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/outbox/provider"
)

// A text is counted as Mastodon counts a status, never less: a grapheme
// cluster is one, a link it would recognise is 23, and a link it might
// not recognise (no known top-level domain) is counted whole.
func TestLinkedLengthCountsAsMastodonNeverLess(t *testing.T) {
	long := strings.Repeat("a", 60)
	for _, tc := range []struct {
		text string
		want int
	}{
		{"hello", 5},
		{"é and e\u0301", 7},
		{"🇫🇷👍🏽", 2},
		{"👨\u200d👩\u200d👧", 1},
		{"@\u200deveryone", 9}, // the joiner joins the @
		{"see https://wiki.example.org/" + long, 4 + 23},
		{"see https://wiki.example.org/" + long + ".", 4 + 23 + 1},
		{"(https://x.io/a)", 1 + 23 + 1},
		{"https://wiki.example/" + long, 21 + 60},         // .example is no TLD
		{"https://127.0.0.1:8080/" + long, 23 + 60},       // nor is an address
		{"xhttps://wiki.example.org/" + long, 26 + 60},    // not at a word's start
		{"https://wiki.example.org/a(b)" + long, 23 + 63}, // a parenthesis may end it
	} {
		if got := provider.LinkedLength(tc.text, 23); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.text, got, tc.want)
		}
	}
}
