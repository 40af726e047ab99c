package tidemark_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/jsontest"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
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
		got := jsontest.Keys(t, tc.value)
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

// A field migration run (docs/documents.md's run table, which README's
// "JSON output" points to) carries every field the table lists, for a run
// that has just started and for one that finished: an empty string is "",
// a time that has not happened is null.
func TestMigrationRunJSONFieldsAreTheDocumentedOnes(t *testing.T) {
	want := documentedRunFields(t)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lease, end := start.Add(time.Minute), start.Add(time.Hour)
	fresh := content.Run{ID: "01R", Collection: "notes", Field: "n", From: "text", To: "number",
		Status: content.RunRunning, BatchSize: 500, Total: 3, Holder: "w1", LeaseExpiresAt: &lease,
		CreatedAt: start, UpdatedAt: start}
	done := fresh
	done.Status, done.Cursor, done.Walked, done.Converted, done.Batches = content.RunDone, "01D", 3, 3, 1
	done.Holder, done.LeaseExpiresAt, done.FinishedAt, done.UpdatedAt = "", nil, &end, end
	for name, r := range map[string]content.Run{"fresh": fresh, "done": done, "zero": {}} {
		if got := jsontest.Keys(t, r); !slices.Equal(got, want) {
			t.Errorf("%s run: its JSON has\n  %v\ndocs/documents.md lists\n  %v", name, got, want)
		}
	}
	var m map[string]any
	b, _ := json.Marshal(fresh)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if v, ok := m["finished_at"]; !ok || v != nil {
		t.Errorf("an unfinished run's finished_at is %v (present: %v), want null", v, ok)
	}
	if v, ok := m["error"]; !ok || v != "" {
		t.Errorf("a run without an error has error %v (present: %v), want \"\"", v, ok)
	}
}

// documentedRunFields reads the field column of docs/documents.md's run
// table.
func documentedRunFields(tb testing.TB) []string {
	tb.Helper()
	b, err := os.ReadFile("docs/documents.md")
	if err != nil {
		tb.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\nRun (`set-type`")
	if !ok {
		tb.Fatal("docs/documents.md has no run table")
	}
	_, sec, _ = strings.Cut(sec, "\n|") // the table starts
	sec, _, _ = strings.Cut(sec, "\n\n")
	var fields []string
	for _, line := range strings.Split("|"+sec, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "field" {
			continue
		}
		fields = append(fields, names(cells[1])...)
	}
	if len(fields) == 0 {
		tb.Fatal("docs/documents.md's run table lists no fields")
	}
	return slices.Sorted(slices.Values(fields))
}
