package ingest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

// A source's name is a path segment of its console page and what lists
// show of it: CheckName refuses what no URL can carry as one segment and
// what could make one name look like another, and says which character
// or why.
func TestCheckName(t *testing.T) {
	for _, name := range []string{"blog", "Go blog", "café", "日本語のブログ", "a.b", "...", ".hidden", "news (en)", "🚀 launches", "a+b=c", "x's feed"} {
		if err := ingest.CheckName(name); err != nil {
			t.Errorf("CheckName(%q) = %v, want it accepted", name, err)
		}
	}
	for _, tc := range []struct{ name, says string }{
		{"", "empty"},
		{".", "dot segment"},
		{"..", "dot segment"},
		{"a/b", "/"},
		{"a%2Fb", "%"},
		{"100%", "%"},
		{"a\\b", "\\"},
		{"a?b", "?"},
		{"a\x01b", "U+0001"},
		{"a\u0085b", "U+0085"},   // C1 control (next line)
		{"a\u202eb", "U+202E"},   // right-to-left override
		{"blog\u2066", "U+2066"}, // left-to-right isolate
		{"a\u200bb", "U+200B"},   // zero-width space
		{"a\u200db", "U+200D"},   // zero-width joiner
		{"\ufeffblog", "U+FEFF"}, // byte order mark
		{"a\u00adb", "U+00AD"},   // soft hyphen
		{"a\u2060b", "U+2060"},   // word joiner
		{"a\u3164b", "U+3164"},   // Hangul filler, a letter that shows nothing
		{"a\u034fb", "U+034F"},   // combining grapheme joiner
		{"blog\ufe0f", "U+FE0F"}, // variation selector
		{"a\u00a0b", "U+00A0"},   // no-break space, looks like a space
		{"a\u2028b", "U+2028"},   // line separator
		{"a\ue000b", "U+E000"},   // private use
		{"a\xffb", "UTF-8"},      // not text
		{strings.Repeat("a", ingest.MaxNameLen+1), "at most"},
	} {
		err := ingest.CheckName(tc.name)
		if !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("CheckName(%q) = %v, want an invalid-input error", tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("CheckName(%q) = %q, want it to say %q", tc.name, err, tc.says)
		}
	}
}
