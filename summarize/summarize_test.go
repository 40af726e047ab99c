package summarize_test

import (
	"testing"
	"unicode/utf8"

	"github.com/tidemark/tidemark/summarize"
)

func TestCutOnRuneBoundary(t *testing.T) {
	s := "añb€c" // a(1) ñ(2) b(1) €(3) c(1)
	for n, want := range map[int]string{0: "", 1: "a", 2: "a", 3: "añ", 4: "añb", 5: "añb", 6: "añb", 7: "añb€", 8: "añb€c", 99: "añb€c"} {
		got := summarize.Cut(s, n)
		if got != want || !utf8.ValidString(got) || len(got) > n {
			t.Errorf("Cut(%q, %d) = %q, want %q", s, n, got, want)
		}
	}
}
