package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/publish"
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

// activity is an indeterminate progress display on stderr for work whose
// size is not known up front (a backlog being drained, pages being
// published). It shows only when stderr is a terminal, so scripts, logs and
// --json stay clean; lines printed through it do not tear the display.
type activity struct {
	bar *progressbar.ProgressBar
}

func (a *app) activity(desc string) *activity {
	f, ok := raw(a.stderr).(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &activity{}
	}
	return &activity{bar: progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

// print runs fn (which prints a line) without tearing the display.
func (p *activity) print(fn func()) {
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fn()
	if p.bar != nil {
		_ = p.bar.RenderBlank()
	}
}

func (p *activity) describe(desc string) {
	if p.bar != nil {
		p.bar.Describe(desc)
		_ = p.bar.Add(1)
	}
}

func (p *activity) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// ingestOnce drains every due source (`run --once`): each source is run
// until it has caught up, bounded by maxPasses runs per source. The result
// counts what was run, what failed and what was left pending, so the
// command's exit status can say whether work was left undone.
func (a *app) ingestOnce(ctx context.Context, sc *ingest.Scheduler, maxPasses int, quiet bool, tally *onceTally) (ingest.DrainResult, error) {
	prog := &activity{}
	if !quiet {
		prog = a.activity("ingest")
	}
	var runs, events int
	sc.OnReport = func(r ingest.Report, err error) {
		tally.add(ctx, r, err)
		runs++
		events += r.EventsNew + r.EventsChanged
		if !quiet {
			prog.print(func() { printReport(a, r, err) })
		}
		prog.describe(fmt.Sprintf("ingest: %d runs, %d events", runs, events))
	}
	res, err := sc.Drain(ctx, ingest.DrainOptions{MaxPasses: maxPasses})
	prog.finish()
	if res.Pending > 0 {
		a.leftUndone("%d sources still have a backlog after %d runs each", res.Pending, maxPasses)
	}
	return res, err
}

// publishAllRounds bounds publishAll: a round handles up to
// publishRoundSize events and pages, so this is ten million pages.
const (
	publishRoundSize   = 1000
	publishRoundsLimit = 10000
)

// publishTotals adds up the rounds of publishAll.
type publishTotals struct {
	Accepted, Unchanged, SummariesFailed int
	Published, PagesFailed               int
	Pages                                int
	Errors                               []string
	Index                                string
	// More says publishAll stopped at its round limit with work left.
	More bool
}

// publishAll summarizes and publishes in rounds until nothing is pending:
// a round that made no progress (everything left failed) or handled less
// than a full round ends it, so a failure that repeats cannot spin.
func (a *app) publishAll(ctx context.Context, svc *publish.Service, quiet bool) (publishTotals, error) {
	var t publishTotals
	prog := &activity{}
	if !quiet {
		prog = a.activity("publish")
	}
	defer prog.finish()
	for round := 0; ; round++ {
		if round == publishRoundsLimit {
			t.More = true
			return t, nil
		}
		r, err := a.publishRound(ctx, svc, "", publishRoundSize)
		s, p := r.Summarized, r.Published
		t.Accepted += s.Accepted
		t.Unchanged += s.Unchanged
		t.SummariesFailed += s.Failed
		t.Published += p.Published
		t.PagesFailed += p.Failed
		t.Pages = max(t.Pages, p.Pages)
		if r.Index != "" {
			t.Index = r.Index
		}
		for _, e := range append(s.Errors, p.Errors...) {
			if len(t.Errors) < 20 {
				t.Errors = append(t.Errors, e)
			}
		}
		prog.describe(fmt.Sprintf("publish: %d summaries, %d pages", t.Accepted, t.Published))
		if err != nil {
			// What the round did is counted above and kept; the caller
			// says what the error left undone.
			return t, err
		}
		full := s.Considered >= publishRoundSize || p.Published+p.Failed >= publishRoundSize
		progress := s.Accepted+p.Published > 0
		if !full || !progress {
			return t, nil
		}
	}
}
