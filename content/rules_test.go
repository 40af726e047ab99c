package content_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
)

func TestRules(t *testing.T) {
	const wrapped = `[{"_type":"block","children":[{"_type":"span","text":"hello"}]}]`
	tests := []struct {
		from, to content.FieldType
		in, want string // want "" means the rule refuses
	}{
		{content.Text, content.Number, `"42"`, `42`},
		{content.Text, content.Number, `" -1.5 "`, `-1.5`},
		{content.Text, content.Number, `"forty-two"`, ``},
		{content.Text, content.Number, `"NaN"`, ``},
		{content.Text, content.Number, `"Inf"`, ``},
		{content.Text, content.Number, `42`, ``}, // its own output: refused, never re-parsed
		// A decimal number only, and only one a number keeps as it is:
		// nothing lost silently.
		{content.Text, content.Number, `"1_000"`, ``},
		{content.Text, content.Number, `"0x10"`, ``},
		{content.Text, content.Number, `"Infinity"`, ``},
		{content.Text, content.Number, `"1e400"`, ``},
		{content.Text, content.Number, `"1e-400"`, ``},
		{content.Text, content.Number, `"1e-99999999999999999999"`, ``},
		{content.Text, content.Number, `"123456789012345678901234567890"`, ``},
		{content.Text, content.Number, `"9007199254740993"`, ``},
		{content.Text, content.Number, `"3.14159265358979323846"`, ``},
		{content.Text, content.Number, `"1,5"`, ``},
		{content.Text, content.Number, `""`, ``},
		{content.Text, content.Number, `"9007199254740992"`, `9007199254740992`},
		{content.Text, content.Number, `"0.1"`, `0.1`},
		{content.Text, content.Number, `"1.50"`, `1.5`},
		{content.Text, content.Number, `"+2.5e3"`, `2500`},
		{content.Text, content.Number, `".5"`, `0.5`},
		{content.Text, content.Number, `"0e999"`, `0`},
		{content.Text, content.Number, `"0.000"`, `0`},
		{content.Text, content.Number, `"1e-300"`, `1e-300`},
		{content.Text, content.Number, `"1.7976931348623157e308"`, `1.7976931348623157e+308`},
		{content.Number, content.Text, `42`, `"42"`},
		{content.Number, content.Text, `0.1`, `"0.1"`},
		{content.Number, content.Text, `"42"`, ``},
		{content.Text, content.RichText, `"hello"`, wrapped},
		{content.Text, content.RichText, `"a\n\nb"`, `[{"_type":"block","children":[{"_type":"span","text":"a"}]},{"_type":"block","children":[{"_type":"span","text":"b"}]}]`},
		{content.Text, content.RichText, `""`, `[]`},
		{content.Text, content.RichText, wrapped, ``}, // never double-wrapped
		{content.RichText, content.Text, wrapped, `"hello"`},
		{content.RichText, content.Text, `[{"_type":"block","style":"h1","children":[{"_type":"span","text":"a"},{"_type":"span","text":"b","marks":["em"]}]},{"_type":"block","children":[{"_type":"span","text":"c"}]}]`, `"ab\n\nc"`},
		{content.RichText, content.Text, `"hello"`, ``},
		{content.Boolean, content.Number, `false`, `0`},
		{content.Boolean, content.Number, `true`, `1`},
		{content.Boolean, content.Number, `1`, ``},
		{content.Number, content.Boolean, `0`, `false`},
		{content.Number, content.Boolean, `1`, `true`},
		{content.Number, content.Boolean, `2`, ``},
		{content.Number, content.Boolean, `0.5`, ``},
		{content.Number, content.Boolean, `true`, ``},
		{content.Text, content.Boolean, `"true"`, `true`},
		{content.Text, content.Boolean, `"false"`, `false`},
		{content.Text, content.Boolean, `"yes"`, ``},
		{content.Text, content.Boolean, `"True"`, ``},
		{content.Text, content.Boolean, `true`, ``},
		{content.Boolean, content.Text, `true`, `"true"`},
		{content.Boolean, content.Text, `false`, `"false"`},
		{content.Text, content.DateTime, `"2026-01-02T03:04:05Z"`, `"2026-01-02T03:04:05Z"`},
		{content.Text, content.DateTime, `"2026-01-02T03:04:05.5+02:00"`, `"2026-01-02T03:04:05.5+02:00"`},
		{content.Text, content.DateTime, `"2026-01-02"`, ``},
		{content.Text, content.DateTime, `"yesterday"`, ``},
		{content.DateTime, content.Text, `"2026-01-02T03:04:05Z"`, `"2026-01-02T03:04:05Z"`},
		{content.DateTime, content.Text, `"not a date"`, ``},
		{content.Text, content.Text, `"x"`, ``},
	}
	for _, tt := range tests {
		r, ok := content.RuleFor(tt.from, tt.to)
		name := string(tt.from) + "→" + string(tt.to) + " " + tt.in
		if tt.from == tt.to {
			if ok {
				t.Errorf("%s: a rule from a type to itself", name)
			}
			continue
		}
		if !ok {
			t.Fatalf("%s: no rule", name)
		}
		got, err := r.Apply(json.RawMessage(tt.in))
		if tt.want == "" {
			var re *content.RuleError
			if !errors.As(err, &re) || re.Rule != r.Name() {
				t.Errorf("%s: got %s, %v; want the rule to refuse", name, got, err)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: got %s, %v; want %s", name, got, err, tt.want)
			continue
		}
		// The output is valid for the target type.
		if _, err := content.Normalize(tt.to, got); err != nil {
			t.Errorf("%s: output %s invalid for %s: %v", name, got, tt.to, err)
		}
	}
	// Null converts to null without calling the rule.
	r, _ := content.RuleFor(content.Text, content.Number)
	if got, err := r.Apply(json.RawMessage("null")); err != nil || string(got) != "null" {
		t.Errorf("null: %s %v", got, err)
	}
}

func TestUnsupportedPairs(t *testing.T) {
	supported := map[string]bool{}
	for _, r := range content.Rules() {
		supported[r.Name()] = true
	}
	if len(supported) != 10 {
		t.Fatalf("%d rules, want the 10 the issue lists: %v", len(supported), supported)
	}
	for _, pair := range []string{"datetime→number", "number→datetime", "richtext→number", "boolean→richtext", "datetime→boolean", "number→richtext"} {
		if supported[pair] {
			t.Errorf("%s is supported; it should be refused", pair)
		}
	}
	c := content.Collection{Name: "c", Fields: []content.Field{{Name: "d", Type: content.DateTime}, {Name: "t", Type: content.Text}}}
	for _, tc := range []struct {
		field string
		to    content.FieldType
	}{{"d", content.Number}, {"t", content.Text}, {"missing", content.Text}} {
		if err := content.CheckChange(c, tc.field, tc.to); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("change %s to %s: %v, want refused", tc.field, tc.to, err)
		}
	}
	if err := content.CheckChange(c, "t", content.Number); err != nil {
		t.Errorf("text→number refused: %v", err)
	}
}

func TestNormalize(t *testing.T) {
	valid := []struct {
		t        content.FieldType
		in, want string
	}{
		{content.Text, `"x"`, `"x"`},
		{content.Number, `1.50`, `1.5`},
		{content.Number, `-0`, `-0`},
		{content.Number, `9007199254740992`, `9007199254740992`},
		{content.Number, `2.5e3`, `2500`},
		{content.Number, `1e-300`, `1e-300`},
		{content.Boolean, `true`, `true`},
		{content.RichText, `[ {"_type":"block", "_key":"k", "children":[]} ]`, `[{"_type":"block","_key":"k","children":[]}]`},
		{content.DateTime, `"2026-01-02T03:04:05Z"`, `"2026-01-02T03:04:05Z"`},
		{content.Number, `null`, `null`},
	}
	for _, v := range valid {
		got, err := content.Normalize(v.t, json.RawMessage(v.in))
		if err != nil || string(got) != v.want {
			t.Errorf("%s %s: got %s %v, want %s", v.t, v.in, got, err, v.want)
		}
	}
	invalid := []struct {
		t  content.FieldType
		in string
	}{
		{content.Text, `3`}, {content.Number, `"3"`}, {content.Boolean, `"true"`}, {content.Boolean, `1`},
		{content.RichText, `"text"`}, {content.RichText, `[{"_type":"image"}]`}, {content.RichText, `[{"_type":"block"}]`},
		{content.RichText, `[{"_type":"block","children":[{"_type":"span","text":3}]}]`},
		{content.DateTime, `"2026-01-02"`}, {content.DateTime, `1767322800`},
		// A number the field would not keep as written is refused, as
		// text→number refuses it: lost digits, out of range, become 0.
		{content.Number, `9007199254740993`}, {content.Number, `0.12345678901234567890`},
		{content.Number, `1e400`}, {content.Number, `1e-400`},
	}
	for _, v := range invalid {
		if got, err := content.Normalize(v.t, json.RawMessage(v.in)); err == nil {
			t.Errorf("%s %s: accepted as %s", v.t, v.in, got)
		}
	}
	if got := content.Flatten(content.Wrap("a\n\nb\nc")); got != "a\n\nb\nc" {
		t.Errorf("Flatten(Wrap(s)) = %q", got)
	}
}
