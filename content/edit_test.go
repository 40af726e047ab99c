package content_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidemark/tidemark/content"
)

// EditText turns a plain-text edit (the console's notes box) into rich
// text, keeping what the plain text cannot show wherever the edit did not
// reach it.
func TestEditText(t *testing.T) {
	const (
		link   = `{"_type":"block","_key":"b1","style":"h2","markDefs":[{"_key":"l1","_type":"link","href":"https://example.com/"}],"children":[{"_type":"span","_key":"s1","text":"See ","marks":[]},{"_type":"span","_key":"s2","text":"the docs","marks":["l1"]},{"_type":"span","_key":"s3","text":" now.","marks":["em"]}]}`
		second = `{"_type":"block","_key":"b2","style":"normal","children":[{"_type":"span","text":"Second.","marks":["strong"]}]}`
		stored = `[` + link + `,` + second + `]`
	)
	plain := func(s string) string { return `{"_type":"block","children":[{"_type":"span","text":"` + s + `"}]}` }
	tests := []struct {
		name, text, want string
	}{
		{"unchanged", "See the docs now.\n\nSecond.", stored},
		{"unchanged but for surrounding white space", "  See the docs now.\n\nSecond.\n", stored},
		{"a paragraph added keeps the others", "See the docs now.\n\nNew.\n\nSecond.", `[` + link + `,` + plain("New.") + `,` + second + `]`},
		{"a paragraph removed keeps the others", "Second.", `[` + second + `]`},
		{"an edit inside a marked span keeps its marks",
			"See the fine docs now.\n\nSecond.",
			`[{"_key":"b1","_type":"block","children":[{"_type":"span","_key":"s1","text":"See ","marks":[]},{"_type":"span","_key":"s2","text":"the fine docs","marks":["l1"]},{"_type":"span","_key":"s3","text":" now.","marks":["em"]}],"markDefs":[{"_key":"l1","_type":"link","href":"https://example.com/"}],"style":"h2"},` + second + `]`},
		{"a span the edit removes goes, and its link with it",
			"See now.\n\nSecond.",
			`[{"_key":"b1","_type":"block","children":[{"_type":"span","_key":"s1","text":"See ","marks":[]},{"_type":"span","_key":"s3","text":"now.","marks":["em"]}],"markDefs":[],"style":"h2"},` + second + `]`},
		{"text typed at a span's start joins that span",
			"See the docs now.\n\nThe second.",
			`[` + link + `,{"_key":"b2","_type":"block","children":[{"_type":"span","text":"The second.","marks":["strong"]}],"style":"normal"}]`},
		{"a multi-byte edit stays on rune boundaries",
			"See the docs now.\n\nSécond.",
			`[` + link + `,{"_key":"b2","_type":"block","children":[{"_type":"span","text":"Sécond.","marks":["strong"]}],"style":"normal"}]`},
		{"everything replaced", "Replaced", `[{"_key":"b1","_type":"block","children":[{"_type":"span","_key":"s1","text":"Replaced","marks":[]}],"markDefs":[],"style":"h2"}]`},
		{"empty text is no blocks", "", `[]`},
	}
	for _, tc := range tests {
		got, err := content.EditText(json.RawMessage(stored), tc.text)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !jsonEqual(t, got, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if _, err := content.Normalize(content.RichText, got); err != nil && tc.text != "" {
			t.Errorf("%s: the edit is not valid rich text: %v", tc.name, err)
		}
		if blocks, _ := content.ParseRichText(got); tc.text != "" && content.Flatten(blocks) != trimmed(tc.text) {
			t.Errorf("%s: the edit reads %q, want %q", tc.name, content.Flatten(blocks), tc.text)
		}
	}
	// Unchanged text gives back the stored bytes themselves.
	if got, _ := content.EditText(json.RawMessage(stored), "See the docs now.\n\nSecond."); !bytes.Equal(got, []byte(stored)) {
		t.Errorf("unchanged: %s", got)
	}
	// No stored value: the text wrapped.
	if got, err := content.EditText(nil, "a\n\nb"); err != nil || !jsonEqual(t, got, `[`+plain("a")+`,`+plain("b")+`]`) {
		t.Errorf("nothing stored: %s %v", got, err)
	}
	// A stored value that is not rich text is an error, not overwritten.
	if _, err := content.EditText(json.RawMessage(`"text"`), "a"); err == nil {
		t.Error("a stored value that is not rich text: no error")
	}
}

func trimmed(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\n') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\n') {
		s = s[:len(s)-1]
	}
	return s
}

func jsonEqual(tb testing.TB, got json.RawMessage, want string) bool {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("got %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatalf("want %s: %v", want, err)
	}
	a, _ := json.Marshal(g)
	b, _ := json.Marshal(w)
	return bytes.Equal(a, b)
}
