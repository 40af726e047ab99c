package outbox_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// At info level the deliverer says what it sent and what came of it, and
// what a reconciliation decided: a daemon is not silent about its writes.
func TestTheDelivererLogsItsSendsAtInfo(t *testing.T) {
	h := newHarness(t, sqltest.Backends()[0], laneOpts{noCount: true})
	a := h.draft("t1", "one")
	b := h.draft("t1", "two")
	var buf bytes.Buffer
	d := h.deliverer("w1")
	d.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h.step(d)
	h.srv.LoseAnswers(1)
	h.env.Clock.Advance(time.Minute)
	h.step(d)
	h.env.Clock.Advance(provider.DefaultTimeout + time.Minute)
	h.step(d) // reconciles b
	log := buf.String()
	for _, want := range []string{
		"outbox: sent", "intent=" + a.ID, "outcome=landed",
		"intent=" + b.ID, "outcome=unknown",
		"outbox: reconciled", "landed=2",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not say %q:\n%s", want, log)
		}
	}
}
