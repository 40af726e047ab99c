package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

// onceTally is what `run --once` could not do: the sources whose run
// failed, and the work its later steps left undone (they add to undone).
// A pass that leaves anything undone exits 5, so a script notices, and its
// last line says what failed and that what succeeded was kept.
type onceTally struct {
	runs, settled, failed int
	// cut counts the runs that ended after an interrupt without settling:
	// they were released without spending their retry budget.
	cut    int
	names  []string
	undone []string
}

// add counts one run's report. A source another worker holds is not a
// failure of this pass: that worker is running it.
func (t *onceTally) add(ctx context.Context, r ingest.Report, err error) {
	t.runs++
	switch {
	case r.Outcome.Advances():
		t.settled++
	case ctx.Err() != nil:
		t.cut++
	case r.Outcome == "" && (err == nil || errors.Is(err, tidemark.ErrClaimHeld) || errors.Is(err, context.Canceled)):
	default:
		t.failed++
		what := string(r.Outcome)
		if what == "" {
			what = "not run"
		}
		if len(t.names) < 5 {
			t.names = append(t.names, fmt.Sprintf("%s %s", r.Source, what))
		}
	}
}

// err is nil when the pass did everything it set out to do.
func (t *onceTally) err() error {
	if t.failed == 0 && len(t.undone) == 0 {
		return nil
	}
	var parts []string
	if t.failed > 0 {
		names := strings.Join(t.names, ", ")
		if t.failed > len(t.names) {
			names += ", …"
		}
		parts = append(parts, fmt.Sprintf("%d of %d sources failed (%s)", t.failed, t.runs, names))
	}
	parts = append(parts, t.undone...)
	return &incompleteError{strings.Join(parts, "; ")}
}

// interrupted says what an interrupted pass kept.
func (t *onceTally) interrupted(err error) error {
	return fmt.Errorf("run --once interrupted: %d runs settled and are kept, %d failed, %d were cut short and released "+
		"without spending their retry budget; publishing and delivery did not run: %w", t.settled, t.failed, t.cut, err)
}

// incompleteError says a pass finished with work left undone; it matches
// tidemark.ErrUnavailable (exit 5): running the same command again, later,
// is how the rest gets done.
type incompleteError struct{ what string }

func (e *incompleteError) Error() string {
	return "run --once left work undone: " + e.what + ".\nWhat succeeded is kept (settled runs, published pages, sent intents); " +
		"run the same command again to retry the rest (a failed source is due again after its backoff: `tidemark source list`)"
}
func (e *incompleteError) Unwrap() error { return tidemark.ErrUnavailable }
