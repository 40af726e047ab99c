package main

import (
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

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
