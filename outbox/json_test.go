package outbox_test

import (
	"slices"
	"testing"

	"github.com/tidemark/tidemark/internal/jsontest"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
)

// Every field docs/outbox.md lists for an object is in its JSON even
// when empty: a script reading one never finds it missing.
func TestOutboxJSONHasEveryDocumentedField(t *testing.T) {
	for _, tc := range []struct {
		object string
		value  any
		fields []string
	}{
		{"lanes --json / lane show --json", outbox.LaneView{}, []string{"name", "provider", "settings", "min_gap", "skew", "retirement",
			"lease_token", "lease_holder", "lease_expires_at", "next_send_at", "last_send_at", "needs_reconcile", "in_flight",
			"counts", "guarantee", "health", "problem", "last_reconciliation", "failing"}}, // and gaps, which every lane a store reports has
		{"lane set --json", outbox.LaneSet{}, []string{"name", "health", "guarantee", "key_resend_lost"}},
		{"lane set --json: key_resend_lost", outbox.KeyResendLost{}, []string{"in_doubt", "intents", "message"}},
		{"intents list --json / intents show --json", outbox.Intent{}, []string{"id", "lane", "rank", "target", "parent", "body", "body_sha256",
			"idempotency_key", "state", "state_reason", "remote_id", "attempts", "created_at", "updated_at", "landed_at",
			"first_attempt_at", "last_attempt_at"}},
		{"a lane's guarantee", provider.LaneGuarantee{}, []string{"guarantee", "by", "resend_in_doubt", "key_window", "opted_in", "missing", "why"}},
		{"plan --json / reconcile --json", outbox.Plan{}, []string{"join", "mark", "landed", "untouched", "holes", "replay", "unexecutable",
			"replay_already_landed", "unmatched_own_writes", "untouched_attempted", "duplicate_own_writes", "accounting"}},
	} {
		got := jsontest.Keys(t, tc.value)
		for _, f := range tc.fields {
			if !slices.Contains(got, f) {
				t.Errorf("%s: an empty one's JSON has no %q (it has %v)", tc.object, f, got)
			}
		}
	}
}
