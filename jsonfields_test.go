package tidemark_test

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

// Every object README's "JSON output" section lists carries exactly the
// fields it lists, each present even when empty (a zero value): field
// names are stable, and a script reading one never finds it missing.
func TestJSONFieldsAreTheDocumentedOnes(t *testing.T) {
	doc := readmeJSONObjects(t)
	source := doc["source"]
	detail := append(slices.Clone(source[0]), source[1]...) // `source show` adds …
	for _, tc := range []struct {
		object string
		fields []string
		value  any
	}{
		{"source", source[0], tidemark.Source{}},
		{"source show", detail, ingest.Detail{}},
		{"run", doc["run"][0], tidemark.Run{}},
		{"action", doc["action"][0], ingest.Action{}},
		{"event", doc["event"][0], tidemark.Event{}},
		{"run report", doc["run report"][0], ingest.Report{}},
		{"token", doc["token"][0], tidemark.Token{}},
	} {
		got := jsonKeys(t, tc.value)
		want := slices.Sorted(slices.Values(tc.fields))
		if len(want) == 0 {
			t.Errorf("%s: README lists no fields", tc.object)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: a zero value's JSON has\n  %v\nREADME lists\n  %v", tc.object, got, want)
		}
	}
	// An absent config is an empty object, not null.
	var src map[string]any
	b, _ := json.Marshal(tidemark.Source{})
	if err := json.Unmarshal(b, &src); err != nil {
		t.Fatal(err)
	}
	if c, ok := src["config"].(map[string]any); !ok || len(c) != 0 {
		t.Errorf("an absent config is %v, want {}", src["config"])
	}
}

func jsonKeys(tb testing.TB, v any) []string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	return slices.Sorted(maps.Keys(m))
}

var (
	bulletRE = regexp.MustCompile(`(?s)^- \*\*([^*]+)\*\*(.*)$`)
	fieldRE  = regexp.MustCompile("`([a-z_]+)`")
)

// readmeJSONObjects reads README's "JSON output" section: for each object,
// the fields it lists (what is in parentheses says a field's values, or
// where it is printed, and is not a field), then those a later clause adds
// ("`source show` adds …").
func readmeJSONObjects(tb testing.TB) map[string][][]string {
	tb.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		tb.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## JSON output\n")
	if !ok {
		tb.Fatal("README has no JSON output section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	sec, _, _ = strings.Cut(sec, "\nTimes are")
	out := map[string][][]string{}
	for _, item := range strings.Split(sec, "\n- ")[1:] {
		m := bulletRE.FindStringSubmatch("- " + strings.Join(strings.Fields(item), " "))
		if m == nil {
			continue
		}
		clauses := strings.Split(withoutParens(m[2]), ";")
		lists := [][]string{names(clauses[0])}
		for _, c := range clauses[1:] {
			if _, added, ok := strings.Cut(c, " adds "); ok {
				lists = append(lists, names(added))
			}
		}
		out[m[1]] = lists
	}
	return out
}

func names(s string) []string {
	var out []string
	for _, m := range fieldRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// withoutParens drops every parenthesized part of s, nested ones too.
func withoutParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}
