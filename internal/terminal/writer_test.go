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
