package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

func TestWriteReport(t *testing.T) {
	until := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	held := fmt.Errorf("claim: %w", &tidemark.HeldError{Source: "s", Holder: "elsewhere:1", Until: until})
	tests := []struct {
		r    ingest.Report
		err  error
		want string
	}{
		{ingest.Report{Source: "s", Outcome: tidemark.OutcomeItems, EventsNew: 2, EventsChanged: 1, CursorAfter: "0123456789abcdef"}, nil,
			"s                    items       2 new, 1 changed events  cursor - → 0123456789ab\n"},
		{ingest.Report{Source: "s", Outcome: tidemark.OutcomeUnreachable, Error: "timeout", CursorBefore: "abc"}, nil,
			"s                    unreachable timeout (cursor stays at abc)\n"},
		{ingest.Report{Source: "s"}, held, "s                    not run: " + held.Error() +
			"\n  if that was this worker under another identity, run again with --holder elsewhere:1 to re-enter its run;" +
			" otherwise it is free once the lease expires at 2024-01-02 03:04:05 UTC\n"},
		// A git cursor inside a merge is one commit a side: each is named,
		// so a move of one side shows.
		{ingest.Report{Source: "s", Outcome: tidemark.OutcomeItems, EventsNew: 3,
			CursorBefore: strings.Repeat("a", 40) + "," + strings.Repeat("b", 40), CursorAfter: strings.Repeat("a", 40) + "," + strings.Repeat("c", 40)}, nil,
			"s                    items       3 new, 0 changed events  cursor aaaaaaaaaaaa,bbbbbbbbbbbb → aaaaaaaaaaaa,cccccccccccc\n"},
		{ingest.Report{Source: "s"}, fmt.Errorf("source %q: %w", "s", tidemark.ErrNotClaimable), "s                    not run: source \"s\": source not claimable\n"},
	}
	for _, tc := range tests {
		var b strings.Builder
		if err := ingest.WriteReport(&b, tc.r, tc.err); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("got:\n%q\nwant:\n%q", b.String(), tc.want)
		}
	}
	if h := tidemark.Hint(fmt.Errorf("x: %w", tidemark.ErrNotFound)); h != "" {
		t.Errorf("Hint of an error that is not a held claim = %q, want none", h)
	}
}

// A run and a test fetch judge a fetch alike: its error's outcome, a short
// read as invalid, else items or empty.
func TestFetchOutcome(t *testing.T) {
	item := tidemark.Item{Key: "a"}
	for _, c := range []struct {
		res  tidemark.FetchResult
		err  error
		want tidemark.Outcome
	}{
		{err: &tidemark.FetchError{Outcome: tidemark.OutcomeUnreachable, Err: errors.New("refused")}, want: tidemark.OutcomeUnreachable},
		{err: errors.New("bug"), want: tidemark.OutcomeError},
		{res: tidemark.FetchResult{Items: []tidemark.Item{item}, Declared: 2}, want: tidemark.OutcomeInvalid},
		{res: tidemark.FetchResult{Items: []tidemark.Item{item}, Declared: 1}, want: tidemark.OutcomeItems},
		{res: tidemark.FetchResult{}, want: tidemark.OutcomeEmpty},
	} {
		if got, reason, _ := ingest.FetchOutcome(c.res, c.err); got != c.want || (c.want.Advances() != (reason == "")) {
			t.Errorf("%+v, %v: %s (%q), want %s", c.res, c.err, got, reason, c.want)
		}
	}
}

// A window's attempts are said against its budget and never as more of it
// than there is: an outage is retried past its budget until the policy
// makes it terminal, and a loss then spends one more. A window that waits
// for an operator, or a paused source, is not due at any time.
func TestWindowWords(t *testing.T) {
	for _, c := range []struct {
		window        tidemark.WindowState
		state         tidemark.SourceState
		attempts      int
		words, notDue string
	}{
		{tidemark.WindowOpen, tidemark.SourceActive, 0, "open, 0 of 5 attempts spent", ""},
		{tidemark.WindowOpen, tidemark.SourceActive, 5, "open, 5 of 5 attempts spent", ""},
		{tidemark.WindowOpen, tidemark.SourceActive, 6, "open, budget of 5 attempts spent; an outage is retried past it", ""},
		{tidemark.WindowTerminal, tidemark.SourceActive, 5, "terminal, 5 of 5 attempts spent", "not due: an operator must retry or skip the window"},
		{tidemark.WindowTerminal, tidemark.SourceActive, 6, "terminal, budget of 5 attempts spent", "not due: an operator must retry or skip the window"},
		{tidemark.WindowOpen, tidemark.SourcePaused, 1, "open, 1 of 5 attempts spent", "not due: paused"},
	} {
		src := tidemark.Source{Window: c.window, State: c.state, WindowAttempts: c.attempts, RetryBudget: 5}
		if got := ingest.WindowWords(src); got != c.words {
			t.Errorf("%s window, %d attempts: %q, want %q", c.window, c.attempts, got, c.words)
		}
		if got := ingest.WindowBrief(src); strings.Contains(got, "/") && c.attempts > 5 {
			t.Errorf("%s window, %d attempts: brief %q counts past the budget", c.window, c.attempts, got)
		}
		if got := ingest.NotDue(src); got != c.notDue {
			t.Errorf("%s %s: not due %q, want %q", c.state, c.window, got, c.notDue)
		}
	}
}

// source show --json (and the API's source) is a source's JSON with its
// runs, actions and unserved workers: a terminal window's source has no
// next due time there either, and the source's way of writing itself does
// not swallow what the detail adds.
func TestDetailJSON(t *testing.T) {
	d := ingest.Detail{
		Source:     tidemark.Source{Name: "s", State: tidemark.SourceActive, Window: tidemark.WindowTerminal, NextDueAt: time.Unix(1, 0)},
		Runs:       []tidemark.Run{{ID: "r1"}},
		Actions:    []ingest.Action{{ID: "a1"}},
		UnservedBy: []ingest.Unserved{{Holder: "w1"}},
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name       string            `json:"name"`
		NextDueAt  *time.Time        `json:"next_due_at"`
		Runs       []tidemark.Run    `json:"runs"`
		Actions    []ingest.Action   `json:"actions"`
		UnservedBy []ingest.Unserved `json:"unserved_by"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if got.Name != "s" || got.NextDueAt != nil || len(got.Runs) != 1 || len(got.Actions) != 1 || len(got.UnservedBy) != 1 {
		t.Errorf("a terminal source's detail is %s", b)
	}
	if !bytes.Contains(b, []byte(`"next_due_at": null`)) && !bytes.Contains(b, []byte(`"next_due_at":null`)) {
		t.Errorf("next_due_at is not present as null: %s", b)
	}
}

// source show says, for each worker that could not serve the source, when
// and why, and until when it leaves the source to other workers.
func TestDetailTextSaysUntilWhenAWorkerStaysAway(t *testing.T) {
	at := time.Date(2026, 12, 1, 17, 54, 52, 0, time.UTC)
	until := at.Add(time.Hour)
	d := ingest.Detail{
		Source:     tidemark.Source{Name: "s", State: tidemark.SourceActive, NextDueAt: at},
		UnservedBy: []ingest.Unserved{{Holder: "w1", Reason: "cannot reach its network", At: at, Until: until}},
	}
	var b bytes.Buffer
	if err := d.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "  w1  at 2026-12-01 17:54:52 UTC, leaves it to other workers until 2026-12-01 18:54:52 UTC: cannot reach its network\n"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("source show lacks %q:\n%s", want, b.String())
	}
}

// What a fetch noticed but did not refuse (an ignore path that matched
// nothing) reaches source test's report, in JSON and in text.
func TestTestFetchReportsTheFetchsNotes(t *testing.T) {
	note := `ignore path "releases.*.views" matched nothing in any of the 2 items`
	f := fetchFunc(func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
		return tidemark.FetchResult{Items: []tidemark.Item{{Key: "v1", Evidence: []byte("{}")}}, Notes: []string{note}}, nil
	})
	rep, err := ingest.TestFetch(context.Background(), f, tidemark.Source{Name: "api", Kind: "json", Location: "x"}, "", false)
	if err != nil || len(rep.Notes) != 1 || rep.Notes[0] != note {
		t.Fatalf("report: %+v, %v", rep, err)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "note:      "+note+"\n") {
		t.Fatalf("text:\n%s", b.String())
	}
}

// cursorChecked is a fetcher that knows its cursor's form.
type cursorChecked struct {
	fetchFunc
	check func(string) error
}

func (c cursorChecked) CheckCursor(cursor string) error { return c.check(cursor) }

// A --cursor the kind cannot read is refused as bad input before anything
// is fetched, never silently taken for "no cursor".
func TestTestFetchRefusesACursorTheKindCannotRead(t *testing.T) {
	fetched := 0
	f := cursorChecked{
		fetchFunc: func(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
			fetched++
			return tidemark.FetchResult{}, nil
		},
		check: func(c string) error {
			if c != "{}" {
				return tidemark.Invalidf("cursor", c, "not a test cursor")
			}
			return nil
		},
	}
	src := tidemark.Source{Name: "s", Kind: "test", Location: "x"}
	if _, err := ingest.TestFetch(context.Background(), f, src, "garbage", false); !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "not a test cursor") {
		t.Fatalf("garbage cursor: %v, want invalid input", err)
	}
	if fetched != 0 {
		t.Fatal("fetched with a cursor the kind cannot read")
	}
	for _, c := range []string{"", "{}"} {
		if rep, err := ingest.TestFetch(context.Background(), f, src, c, false); err != nil || rep.Outcome != tidemark.OutcomeEmpty {
			t.Fatalf("cursor %q: %+v, %v", c, rep, err)
		}
	}
}

// A test fetch's report carries every field its documentation lists, empty
// or not (README, JSON output), and so does each of its items.
func TestTestReportJSONCarriesEveryField(t *testing.T) {
	f := fetchFunc(func(context.Context, tidemark.Source, string) (tidemark.FetchResult, error) {
		return tidemark.FetchResult{Items: []tidemark.Item{{Key: "a", Evidence: []byte("x")}}, Declared: 1}, nil
	})
	rep, err := ingest.TestFetch(context.Background(), f, tidemark.Source{Kind: "test", Name: "s", Location: "x"}, "", false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Report map[string]json.RawMessage
		Items  []map[string]json.RawMessage
	}
	_ = json.Unmarshal(b, &got.Report)
	_ = json.Unmarshal(got.Report["items"], &got.Items)
	for _, k := range []string{"kind", "name", "location", "config", "outcome", "error", "retry_after_seconds", "not_before_seconds", "items", "cursor", "notes"} {
		if _, ok := got.Report[k]; !ok {
			t.Errorf("the report has no %q: %s", k, b)
		}
	}
	for _, k := range []string{"key", "title", "url", "occurred_at", "evidence_sha256", "evidence_bytes", "evidence"} {
		if len(got.Items) != 1 {
			t.Fatalf("items: %s", b)
		}
		if _, ok := got.Items[0][k]; !ok {
			t.Errorf("an item has no %q: %s", k, b)
		}
	}
}
