package terminal

import (
	"bytes"
	"testing"
)

func TestWriterEscapesControls(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain title", "plain title"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"bell\a and cr\r", `bell\x07 and cr\x0d`},
		{"del\x7f", `del\x7f`},
		{"csi\u009b2J", `csi\u009b2J`},
		{"ünïcödé £ ✓", "ünïcödé £ ✓"},
		{"\u00a0nbsp", "\u00a0nbsp"},
		// Bidirectional overrides and isolates reorder the rest of a line
		// ("Trojan Source"): escaped, as the wiki strips them.
		{"abc\u202edcba", `abc\u202edcba`},
		{"\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		{"\u2066x\u2067y\u2068z\u2069", `\u2066x\u2067y\u2068z\u2069`},
		{"\u200eleft\u200fright\u061c", `\u200eleft\u200fright\u061c`},
		{"\u2014 dash \u2026 \u20ac", "\u2014 dash \u2026 \u20ac"},
	}
	for _, tc := range cases {
		var b bytes.Buffer
		w := NewWriter(&b)
		n, err := w.Write([]byte(tc.in))
		if err != nil || n != len(tc.in) {
			t.Fatalf("Write(%q) = %d, %v", tc.in, n, err)
		}
		if b.String() != tc.want {
			t.Errorf("Write(%q) printed %q, want %q", tc.in, b.String(), tc.want)
		}
	}
}
