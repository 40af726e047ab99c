package fetch_test

import (
	"errors"
	"strconv"
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

func cand(id, stable, body string) fetch.Candidate {
	return fetch.Candidate{Item: tidemark.Item{Title: body, Evidence: []byte(body)}, ID: id, Stable: stable}
}

// keysOf runs Keys over one document and returns item title → key.
func keysOf(t *testing.T, shared []string, cands ...fetch.Candidate) (map[string]string, []string) {
	t.Helper()
	items, shared := fetch.Keys(cands, shared)
	out := map[string]string{}
	for _, it := range items {
		out[it.Title] = it.Key
	}
	return out, shared
}

// A key never depends on which other items a document holds: an identity
// once shared stays shared in what the cursor remembers, so an item
// keeps its key when the others that shared its identity are gone, and
// never takes a key another item had (src.md #12).
func TestKeysRememberSharedIdentities(t *testing.T) {
	k1, mem := keysOf(t, nil, cand("dup", "a", "A"))
	if k1["A"] != "dup" || len(mem) != 0 {
		t.Fatalf("a unique identity: %v, remembered %v", k1, mem)
	}
	k2, mem := keysOf(t, mem, cand("dup", "a", "A"), cand("dup", "b", "B"), cand("solo", "s", "S"))
	if k2["A"] != "dup #a" || k2["B"] != "dup #b" || k2["S"] != "solo" || len(mem) != 1 {
		t.Fatalf("a shared identity: %v, remembered %v", k2, mem)
	}
	for _, doc := range [][]fetch.Candidate{{cand("dup", "b", "B")}, {cand("dup", "a", "A")}} {
		k, again := keysOf(t, mem, doc...)
		for title, key := range k {
			if key != k2[title] {
				t.Fatalf("%s alone under its identity is keyed %q, was %q: it would become another item's event", title, key, k2[title])
			}
		}
		if len(again) != 1 || again[0] != mem[0] {
			t.Fatalf("remembered %v, then %v", mem, again)
		}
	}
	// Without the memory the key would be the bare identity: the test
	// asks what it claims to.
	if k, _ := keysOf(t, nil, cand("dup", "b", "B")); k["B"] != "dup" {
		t.Fatalf("keys without memory: %v", k)
	}

	// The second level: items sharing an identity and their Stable hash
	// are keyed by their evidence, and stay so when alone.
	k3, mem3 := keysOf(t, nil, cand("x", "s", "X1"), cand("x", "s", "X2"))
	if k3["X1"] == k3["X2"] || len(mem3) != 2 {
		t.Fatalf("shared identity and stable: %v, remembered %v", k3, mem3)
	}
	if k, _ := keysOf(t, mem3, cand("x", "s", "X2")); k["X2"] != k3["X2"] {
		t.Fatalf("X2 alone: %q, was %q", k["X2"], k3["X2"])
	}
}

// The memory is bounded: past MaxRemembered it becomes RememberAll, which
// keys every item by its whole evidence (never two items in one event).
func TestKeysRememberedIsBounded(t *testing.T) {
	var cands []fetch.Candidate
	for i := 0; i <= fetch.MaxRemembered; i++ {
		id := strconv.Itoa(i)
		cands = append(cands, cand(id, "a", id+"a"), cand(id, "b", id+"b"))
	}
	_, mem := keysOf(t, nil, cands...)
	if len(mem) != 1 || mem[0] != fetch.RememberAll {
		t.Fatalf("%d remembered, want only %q", len(mem), fetch.RememberAll)
	}
	k, mem := keysOf(t, mem, cand("new", "n", "N"))
	if k["N"] != "new #"+tidemark.HashEvidence([]byte("N"))[:16] || len(mem) != 1 {
		t.Fatalf("under RememberAll: %v %v", k, mem)
	}
}

func TestCheckItemsCursor(t *testing.T) {
	for _, good := range []string{`{}`, `{"etag":"x"}`, `{"etag":"x","shared":["0123456789abcdef"]}`, `{"shared":["*"]}`} {
		if err := fetch.CheckItemsCursor("to", "feed", good); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	for _, bad := range []string{`{"shared":["dup"]}`, `{"shared":"x"}`, `{"shared":["0123456789ABCDEF"]}`, `x`} {
		if err := fetch.CheckItemsCursor("to", "feed", bad); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", bad, err)
		}
	}
	c := fetch.ItemsCursor{Shared: []string{"0123456789abcdef"}}
	c.ETag = `"v1"`
	if got := fetch.DecodeItemsCursor(c.Encode()); got.ETag != c.ETag || len(got.Shared) != 1 {
		t.Fatalf("round trip: %+v", got)
	}
	if (fetch.ItemsCursor{}).Encode() != "" {
		t.Fatal("an empty cursor is not empty")
	}
}
