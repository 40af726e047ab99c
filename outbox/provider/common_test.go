package provider_test

import (
	"testing"

	"github.com/tidemark/tidemark/outbox/provider"
)

func TestPageTargetsWalksEachTargetPageByPage(t *testing.T) {
	var walked []string
	cursor := ""
	pages := map[int][]string{0: {"a", "b"}, 1: {}, 2: {"c"}} // tokens after each target's first page
	for range 20 {
		pt, err := provider.ParsePageTargets("k", cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, cursor)
		toks := pages[pt.Index]
		pos := 0
		for i, tok := range toks {
			if tok == pt.Token {
				pos = i + 1
			}
		}
		more := pos < len(toks)
		next := ""
		if more {
			next = toks[pos]
		}
		if cursor = pt.Next(more, next); cursor == "" {
			break
		}
	}
	want := []string{"", "0|a", "0|b", "1", "2", "2|c"}
	if len(walked) != len(want) {
		t.Fatalf("walked %q, want %q", walked, want)
	}
	for i := range want {
		if walked[i] != want[i] {
			t.Fatalf("walked %q, want %q", walked, want)
		}
	}
	for _, bad := range []string{"3", "-1", "x|y"} {
		if _, err := provider.ParsePageTargets("k", bad, 3); err == nil {
			t.Errorf("cursor %q was taken", bad)
		}
	}
}
