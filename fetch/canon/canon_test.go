package canon_test

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/canon"
)

func TestTextNormalizesWhatDoesNotMatter(t *testing.T) {
	a := "\uFEFF\r\n\r\n  Title  \r\nline one \t\r\n\r\n\r\n\r\nline two\r"
	b := "  Title\nline one\n\nline two\n\n\n"
	if canon.Text(a) != canon.Text(b) {
		t.Fatalf("%q != %q", canon.Text(a), canon.Text(b))
	}
	if got, want := canon.Text(a), "  Title\nline one\n\nline two\n"; got != want {
		t.Fatalf("Text = %q, want %q", got, want)
	}
	// What does matter stays.
	if canon.Text("a b") == canon.Text("a  b") || canon.Text("x\ny") == canon.Text("x\n\ny") {
		t.Fatal("Text erased a real difference")
	}
	// Composed and decomposed é are the same text.
	if canon.Text("caf\u00e9") != canon.Text("cafe\u0301") {
		t.Fatal("NFC not applied")
	}
	if canon.Text(" \n\t\n") != "" {
		t.Fatal("blank text is not empty")
	}
}

func TestJSONIsStable(t *testing.T) {
	a := []byte(`{"b": [1, 2.50, {"y": true, "x": null}], "a": "<é>"}`)
	b := []byte("{\n  \"a\":\"<é>\",\"b\":[1,2.50,{\"x\":null,\"y\":true}]}\n")
	ca, err := canon.JSON(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := canon.JSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(ca) != string(cb) || string(ca) != `{"a":"<é>","b":[1,2.50,{"x":null,"y":true}]}` {
		t.Fatalf("%s vs %s", ca, cb)
	}
	if tidemark.HashEvidence(ca) != tidemark.HashEvidence(cb) {
		t.Fatal("same content, different hash")
	}
	// A leading UTF-8 byte-order mark is ignored (RFC 8259).
	if cbom, err := canon.JSON(append([]byte("\xef\xbb\xbf"), a...)); err != nil || string(cbom) != string(ca) {
		t.Fatalf("with a BOM: %s, %v", cbom, err)
	}
	for _, bad := range []string{``, `{`, `{"a":1} {"b":2}`, `[1,]`, "\xef\xbb\xbf", "\xef\xbb\xbf\xef\xbb\xbf{}"} {
		if _, err := canon.JSON([]byte(bad)); err == nil {
			t.Errorf("JSON(%q) accepted", bad)
		}
	}
	deep := make([]byte, 0, 2*canon.MaxDepth+2)
	for range canon.MaxDepth + 1 {
		deep = append(deep, '[')
	}
	if _, err := canon.JSON(deep); err == nil {
		t.Error("too deep accepted")
	}
}

func TestDropRemovesVolatileParts(t *testing.T) {
	v, err := canon.Decode([]byte(`{"id":1,"meta":{"fetched_at":"now","etag":"x"},"items":[{"seen":1,"v":2},{"seen":3,"v":4}]}`))
	if err != nil {
		t.Fatal(err)
	}
	v = canon.Drop(v, []string{"meta.fetched_at", ".items.*.seen", "missing.path"})
	got, _ := canon.Value(v)
	if string(got) != `{"id":1,"items":[{"v":2},{"v":4}],"meta":{"etag":"x"}}` {
		t.Fatalf("got %s", got)
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "a\r\nb", "\uFEFFx  \n\n\n y", "cafe\u0301\r", "\xff\xfe\x00", "\u2000\u3000\n\u00a0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := canon.Text(s)
		if !utf8.ValidString(c) {
			t.Fatalf("invalid UTF-8 out of %q", s)
		}
		if canon.Text(c) != c {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, c, canon.Text(c))
		}
		l := canon.Line(s)
		if canon.Line(l) != l {
			t.Fatalf("Line not idempotent: %q -> %q -> %q", s, l, canon.Line(l))
		}
	})
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"b":1,"a":[1,2,{"z":null}]}`, `"x"`, `1e400`, `{"a":1}{`, `[[[[[[]]]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := canon.JSON(b)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form is not JSON: %s", c)
		}
		c2, err := canon.JSON(c)
		if err != nil || string(c2) != string(c) {
			t.Fatalf("not idempotent: %s -> %s (%v)", c, c2, err)
		}
	})
}
