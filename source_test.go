package tidemark_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
)

// A source that nothing will claim until an operator acts (paused, or its
// window terminal) has no next due time in its JSON: a time there would
// tell a reader it will run then. The field stays present, as null.
func TestSourceJSONNextDueAt(t *testing.T) {
	due := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		state  tidemark.SourceState
		window tidemark.WindowState
		want   any
	}{
		{tidemark.SourceActive, tidemark.WindowOpen, "2025-03-01T12:00:00Z"},
		{tidemark.SourcePaused, tidemark.WindowOpen, nil},
		{tidemark.SourceActive, tidemark.WindowTerminal, nil},
		{tidemark.SourcePaused, tidemark.WindowTerminal, nil},
	} {
		src := tidemark.Source{Name: "s", State: c.state, Window: c.window, NextDueAt: due}
		got := mustJSONObject(t, src)
		v, ok := got["next_due_at"]
		if !ok {
			t.Errorf("%s %s: no next_due_at in %v", c.state, c.window, got)
		}
		if v != c.want {
			t.Errorf("%s %s: next_due_at %v, want %v", c.state, c.window, v, c.want)
		}
		if got["name"] != "s" || got["state"] != string(c.state) {
			t.Errorf("%s %s: the other fields are not the source's: %v", c.state, c.window, got)
		}
	}
}

func mustJSONObject(tb testing.TB, v any) map[string]any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	return m
}
