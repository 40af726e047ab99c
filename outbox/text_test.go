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
