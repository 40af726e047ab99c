package outbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A listing of intents by lane names a lane that exists: an unknown name
// is not found, naming it, as runs of an unknown source are, never an
// empty listing that says the lane has nothing. Intents do not outlive
// their lane (removing it removes them, and each refers to its row), so
// the name of a removed lane is unknown too: no intent carries it.
func TestCheckIntentFilter(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		h := newHarness(t, b, laneOpts{})
		h.draft("room", "one")
		check := func(f outbox.IntentFilter, want error) {
			t.Helper()
			err := outbox.CheckIntentFilter(ctx, h.st, f)
			if !errors.Is(err, want) || err == nil && want != nil {
				t.Errorf("%+v: %v, want %v", f, err, want)
			}
			if want == tidemark.ErrNotFound && err != nil && !strings.Contains(err.Error(), `"`+f.Lane+`"`) {
				t.Errorf("%+v: %v does not name the lane", f, err)
			}
		}
		check(outbox.IntentFilter{}, nil)
		check(outbox.IntentFilter{Lane: "hook"}, nil)
		check(outbox.IntentFilter{Lane: "hook", State: outbox.StateLanded}, nil) // a lane with none in that state
		check(outbox.IntentFilter{State: "fine"}, tidemark.ErrInvalid)
		check(outbox.IntentFilter{Lane: "nope"}, tidemark.ErrNotFound)
		check(outbox.IntentFilter{Lane: "nope", State: outbox.StatePending}, tidemark.ErrNotFound)

		if _, err := h.st.RemoveLane(ctx, "hook", "ops", true); err != nil {
			t.Fatal(err)
		}
		if ins, err := h.st.ListIntents(ctx, outbox.IntentFilter{Lane: "hook"}); err != nil || len(ins) != 0 {
			t.Fatalf("intents of a removed lane: %v, %v; want none: they are removed with it", ins, err)
		}
		check(outbox.IntentFilter{Lane: "hook"}, tidemark.ErrNotFound)
	})
}
