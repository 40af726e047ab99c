package fetch_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch"
)

func TestIntConfig(t *testing.T) {
	cfg := map[string]string{"n": " 42 ", "zero": "0", "neg": "-1", "word": "ten"}
	if n, err := fetch.IntConfig(cfg, "n", 7); err != nil || n != 42 {
		t.Fatalf("n: %d %v", n, err)
	}
	if n, err := fetch.IntConfig(cfg, "unset", 7); err != nil || n != 7 {
		t.Fatalf("unset: %d %v", n, err)
	}
	for _, k := range []string{"zero", "neg", "word"} {
		if _, err := fetch.IntConfig(cfg, k, 7); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%s: got %v, want invalid", k, err)
		}
	}
}

func TestItemKey(t *testing.T) {
	short := strings.Repeat("k", fetch.MaxKeyBytes)
	if got := fetch.ItemKey(short); got != short {
		t.Fatalf("a key at the bound changed: %q", got)
	}
	long := short + "k"
	if got := fetch.ItemKey(long); got != "sha256:"+tidemark.HashEvidence([]byte(long)) {
		t.Fatalf("a long key: %q", got)
	}
}
