package fieldtext

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCell(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		raw  string
		n    int
		want string
	}{
		{"", 60, "-"},
		{"null", 60, "-"},
		{`""`, 60, "-"},
		{`"plain"`, 60, "plain"},
		{`"` + at.Format(time.RFC3339) + `"`, 60, Day(at)},
		{"3", 60, "3"},
		{"false", 60, "false"},
		{"[]", 60, "[]"},
		{`[{"name":"title","type":"text"},{"name":"n","type":"number"}]`, 60, "title:text n:number"},
		{`[{"_type":"block","children":[{"_type":"span","text":"hi"}]}]`, 60, "block:span:hi"},
		{`{"b":1,"a":"x"}`, 60, `{"b":1,"a":"x"}`},
		{`"abcdef"`, 3, "abc"},
	}
	for _, c := range cases {
		if got := Cell(json.RawMessage(c.raw), c.n); got != c.want {
			t.Errorf("Cell(%s, %d) = %q, want %q", c.raw, c.n, got, c.want)
		}
	}
}

func TestColumnsAndDetails(t *testing.T) {
	type item struct {
		Name  string   `json:"name"`
		Count int      `json:"count"`
		Tags  []string `json:"tags,omitempty"`
		RunID string   `json:"run_id,omitempty"`
	}
	var b strings.Builder
	if err := Columns(&b, []item{{Name: "a", Count: 2, Tags: []string{"x"}}, {Name: "bb"}}, "name", "count", "tags", "run_id"); err != nil {
		t.Fatal(err)
	}
	want := "NAME  COUNT  TAGS   RUN ID\na     2      [\"x\"]  -\nbb    0      -      -\n"
	if b.String() != want {
		t.Errorf("Columns:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := Details(&b, item{Name: "a", RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	// count is 0 and tags absent: only the fields with a value.
	if want := "name    a\nrun id  r1\n"; b.String() != want {
		t.Errorf("Details:\n%q\nwant:\n%q", b.String(), want)
	}
}

// A cursor that is a list of hashes is cut hash by hash; any other cursor
// (a feed's validators, a JSON value with commas) is cut as one string.
func TestCursor(t *testing.T) {
	a, b := strings.Repeat("a", 40), strings.Repeat("0", 64)
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{a, "aaaaaaaaaaaa"},
		{a + "," + b, "aaaaaaaaaaaa,000000000000"},
		{`{"etag":"x","n":1}`, `{"etag":"x",`},
		{a + ",", a[:12]},
		{a + ",G", a[:12]},
	} {
		if got := Cursor(tc.in); got != tc.want {
			t.Errorf("Cursor(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// withZone makes zone the process's local time for the test, as TZ
// would: the text forms must not follow it.
func withZone(tb testing.TB, zone string) {
	tb.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		tb.Skipf("no zone database: %v", err)
	}
	old := time.Local
	time.Local = loc
	tb.Cleanup(func() { time.Local = old })
}

// A time the text forms show is in UTC and says so, whatever the
// terminal's zone and whatever zone the time came in.
func TestDayIsUTCAndSaysSo(t *testing.T) {
	withZone(t, "America/New_York")
	at := time.Date(2026, 12, 2, 2, 19, 16, 0, time.UTC)
	const want = "2026-12-02 02:19:16 UTC"
	for _, in := range []time.Time{at, at.Local(), at.In(time.FixedZone("x", 5*3600+1800))} {
		if got := Day(in); got != want {
			t.Errorf("Day(%v) = %q, want %q", in, got, want)
		}
	}
	for _, raw := range []string{`"2026-12-02T02:19:16Z"`, `"2026-12-01T21:19:16-05:00"`, `"2026-12-02T02:19:16.5Z"`} {
		if got := Cell(json.RawMessage(raw), 60); got != want {
			t.Errorf("Cell(%s) = %q, want %q", raw, got, want)
		}
	}
}
