package outbox_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox"
)

// A lane's line counts intents deferred, not attempts: an intent tried
// three times and told to wait each time is one deferred intent, and one a pass
// found its gate closed for by the provider is deferred too.
func TestWriteStepsCountsDeferredIntents(t *testing.T) {
	until := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	steps := []outbox.Step{
		{Kind: outbox.StepSent, IntentID: "a", Outcome: outbox.OutcomeDeferred, Until: &until},
		{Kind: outbox.StepSent, IntentID: "a", Outcome: outbox.OutcomeDeferred, Until: &until},
		{Kind: outbox.StepSent, IntentID: "a", Outcome: outbox.OutcomeDeferred, Until: &until},
		{Kind: outbox.StepSent, IntentID: "b", Outcome: outbox.OutcomeLanded},
		{Kind: outbox.StepWait, IntentID: "c", Outcome: outbox.OutcomeDeferred, Until: &until},
	}
	var buf bytes.Buffer
	if err := outbox.WriteSteps(&buf, "hooks", steps, ""); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "landed 1,") || !strings.Contains(got, "deferred 2,") {
		t.Fatalf("line %q: want landed 1 and deferred 2 (intents a and c)", got)
	}
}

// lane show says what the last reconciliation found of own writes no
// intent explains, with their remote ids: a duplicate once made is not
// silent. A lane whose last reconciliation found none says nothing of it.
func TestLaneShowSaysWhatTheLastReconciliationFoundAstray(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	v := outbox.LaneView{Lane: outbox.Lane{LaneConfig: outbox.LaneConfig{Name: "slk", Provider: "slack"},
		LastReconciliation: &outbox.LastReconciliation{At: at, UnmatchedOwnWrites: 2, DuplicateOwnWrites: 1, RemoteIDs: []string{"C1/3", "C1/1", "C1/2"}}},
		Health: outbox.HealthOK}
	var b bytes.Buffer
	if err := v.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"last reconciliation", "2026-01-01", "2 own writes matched no intent", "1 repeated a landed intent", "C1/3 C1/1 C1/2", "outbox reconcile slk"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lane show does not say %q:\n%s", want, b.String())
		}
	}
	v.LastReconciliation = &outbox.LastReconciliation{At: at, RemoteIDs: []string{}}
	b.Reset()
	if err := v.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "matched no intent") {
		t.Errorf("a clean reconciliation is reported as astray:\n%s", b.String())
	}
}

// intents show says how many attempts an intent had, when the first began
// (when the remote first saw its idempotency key: the key's window runs
// from there) and when the latest did.
func TestIntentShowSaysWhenItsAttemptsBegan(t *testing.T) {
	first := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	latest := first.Add(3 * time.Hour)
	var buf bytes.Buffer
	d := outbox.IntentDetail{Intent: outbox.Intent{ID: "i1", Lane: "hooks", Attempts: 2, FirstAttemptAt: &first, LastAttemptAt: &latest}}
	if err := d.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := "attempts 2: the first at 2026-01-01 09:00:00 UTC, the latest at 2026-01-01 12:00:00 UTC"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("intents show:\n%s\nwant a line %q", buf.String(), want)
	}
	buf.Reset()
	d.Intent.BodySHA256 = strings.Repeat("ab", 32)
	if err := d.WriteText(&buf); err != nil || !strings.Contains(buf.String(), "body abababababab… ") {
		t.Errorf("intents show names the body's hash with one ellipsis:\n%s", buf.String())
	}
	buf.Reset()
	if err := (outbox.IntentDetail{Intent: outbox.Intent{ID: "i2", Lane: "hooks"}}).WriteText(&buf); err != nil || !strings.Contains(buf.String(), "attempts 0: never attempted") {
		t.Errorf("intents show of an intent never attempted:\n%s", buf.String())
	}
}

// A reconciliation that left writes in doubt says so on the lane's line:
// "reconciled 1" alone read as if it had decided them.
func TestWriteStepsSaysWhatAReconciliationLeftInDoubt(t *testing.T) {
	steps := []outbox.Step{{Kind: outbox.StepReconciled, Plan: &outbox.Plan{Unresolved: []string{"a", "b"}}}}
	var buf bytes.Buffer
	if err := outbox.WriteSteps(&buf, "hooks", steps, ""); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "reconciled 1, 2 still in doubt (unresolved)") {
		t.Fatalf("line %q: want it to say 2 writes are still in doubt", got)
	}
	buf.Reset()
	steps[0].Plan.Unresolved = nil
	if err := outbox.WriteSteps(&buf, "hooks", steps, ""); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); strings.Contains(got, "in doubt") {
		t.Fatalf("line %q: a reconciliation that decided everything left nothing in doubt", got)
	}
}

// A lane's lease hint names the lease's end in UTC and says so, whatever
// the process's zone (TZ).
func TestLeaseHintIsUTC(t *testing.T) {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no zone database: %v", err)
	}
	old := time.Local
	time.Local = loc
	t.Cleanup(func() { time.Local = old })
	until := time.Date(2026, 12, 2, 2, 19, 16, 0, time.UTC)
	for _, running := range []bool{false, true} {
		e := &outbox.LeaseHeldError{Lane: "l", Holder: "h:1", Until: until.Local(), Running: running}
		if h := e.Hint(); !strings.Contains(h, "expires at 2026-12-02 02:19:16 UTC") {
			t.Errorf("hint (running %v) = %q, want the lease's end in UTC", running, h)
		}
	}
}
