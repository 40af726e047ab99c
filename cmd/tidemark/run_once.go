package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/publish"
)

// activity is an indeterminate progress display on stderr for work whose
// size is not known up front (a backlog being drained, pages being
// published). It shows only when stderr is a terminal, so scripts, logs and
// --json stay clean; lines printed through it do not tear the display.
type activity struct {
	bar *progressbar.ProgressBar
}

func (a *app) activity(desc string) *activity {
	f, ok := a.stderr.(*os.File)
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
func (a *app) ingestOnce(ctx context.Context, sc *ingest.Scheduler, maxPasses int, quiet bool) (ingest.DrainResult, error) {
	prog := &activity{}
	if !quiet {
		prog = a.activity("ingest")
	}
	var runs, events int
	sc.OnReport = func(r ingest.Report, err error) {
		runs++
		events += r.EventsNew + r.EventsChanged
		if !quiet {
			prog.print(func() { printReport(a, r, err) })
		}
		prog.describe(fmt.Sprintf("ingest: %d runs, %d events", runs, events))
	}
	res, err := sc.Drain(ctx, ingest.DrainOptions{MaxPasses: maxPasses})
	prog.finish()
	if res.Pending > 0 && !quiet {
		fmt.Fprintf(a.stdout, "%d sources still have a backlog after %d runs each; run again to read on\n", res.Pending, maxPasses)
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
		if err != nil {
			return t, err
		}
		s, p := r.Summarized, r.Published
		t.Accepted += s.Accepted
		t.Unchanged += s.Unchanged
		t.SummariesFailed += s.Failed
		t.Published += p.Published
		t.PagesFailed += p.Failed
		t.Pages = p.Pages
		t.Index = r.Index
		for _, e := range append(s.Errors, p.Errors...) {
			if len(t.Errors) < 20 {
				t.Errors = append(t.Errors, e)
			}
		}
		prog.describe(fmt.Sprintf("publish: %d summaries, %d pages", t.Accepted, t.Published))
		full := s.Considered >= publishRoundSize || p.Published+p.Failed >= publishRoundSize
		progress := s.Accepted+p.Published > 0
		if !full || !progress {
			return t, nil
		}
	}
}
