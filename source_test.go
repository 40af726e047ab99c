package tidemark_test

import (
	"encoding/json"
	"strings"
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

// NextTry is when a worker will next try a source and why then: its
// schedule; a backoff after a failed run; a worker's hold that ends after
// the due time (the hold's end, since that worker will not claim it
// before); nothing while paused or terminal. The JSON says the same as
// next_try_at and next_try_reason.
func TestSourceNextTry(t *testing.T) {
	due := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ran := due.Add(-10 * time.Minute)
	held := due.Add(time.Hour)
	failing := ran.Add(-time.Hour)
	for _, c := range []struct {
		name   string
		src    tidemark.Source
		wantAt any
		why    []string // what the reason says, in part
	}{
		{"scheduled", tidemark.Source{State: tidemark.SourceActive, Window: tidemark.WindowOpen, NextDueAt: due,
			LastOutcome: tidemark.OutcomeItems, LastRunAt: &ran}, "2025-03-01T12:00:00Z", nil},
		{"backoff", tidemark.Source{State: tidemark.SourceActive, Window: tidemark.WindowOpen, NextDueAt: due, WindowAttempts: 2, RetryBudget: 5,
			LastOutcome: tidemark.OutcomeUnreachable, LastRunAt: &ran, FailingSince: &failing}, "2025-03-01T12:00:00Z",
			[]string{"backoff", "2 failed attempts", "unreachable"}},
		{"held past due", tidemark.Source{State: tidemark.SourceActive, Window: tidemark.WindowOpen, NextDueAt: due,
			LastOutcome: tidemark.OutcomeError, LastRunAt: &ran, Hold: &tidemark.SourceHold{Holder: "w1", Reason: "worker w1: no such directory", Until: held}},
			"2025-03-01T13:00:00Z", []string{"worker w1 could not serve it and holds off until then: no such directory"}},
		{"paused", tidemark.Source{State: tidemark.SourcePaused, Window: tidemark.WindowOpen, NextDueAt: due}, nil, []string{"paused"}},
		{"terminal", tidemark.Source{State: tidemark.SourceActive, Window: tidemark.WindowTerminal, NextDueAt: due,
			Hold: &tidemark.SourceHold{Holder: "w1", Until: held}}, nil, []string{"terminal", "retries or skips"}},
	} {
		at, why, ok := c.src.NextTry()
		got := mustJSONObject(t, c.src)
		if got["next_try_at"] != c.wantAt {
			t.Errorf("%s: next_try_at %v, want %v", c.name, got["next_try_at"], c.wantAt)
		}
		if ok != (c.wantAt != nil) || (ok && at.UTC().Format(time.RFC3339) != c.wantAt) {
			t.Errorf("%s: NextTry() = %v, %v, want %v", c.name, at, ok, c.wantAt)
		}
		if got["next_try_reason"] != why {
			t.Errorf("%s: next_try_reason %q, NextTry's reason %q", c.name, got["next_try_reason"], why)
		}
		if c.why == nil && why != "" {
			t.Errorf("%s: reason %q, want none (its schedule)", c.name, why)
		}
		for _, w := range c.why {
			if !strings.Contains(why, w) {
				t.Errorf("%s: reason %q does not say %q", c.name, why, w)
			}
		}
		if got["next_due_at"] != nil && got["next_due_at"] != "2025-03-01T12:00:00Z" {
			t.Errorf("%s: next_due_at %v moved with the hold", c.name, got["next_due_at"])
		}
	}
}

// A source stored with a credential in its location (before such
// locations were refused) is shown without it: its JSON (the CLI's
// --json, the API) carries the shown location.
func TestSourceJSONHidesLocationCredentials(t *testing.T) {
	src := tidemark.Source{Name: "s", Location: "https://example.org/feed?category=go&token=SEKRET-qtok-5"}
	got := mustJSONObject(t, src)
	if got["location"] != "https://example.org/feed?category=go&token=•••" {
		t.Errorf("location shown as %v", got["location"])
	}
	if src.ShownLocation() != got["location"] {
		t.Errorf("ShownLocation %q", src.ShownLocation())
	}
}
