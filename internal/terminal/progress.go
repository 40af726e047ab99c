package terminal

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// file returns the terminal under w, or false when w is not one.
func file(w io.Writer) (*os.File, bool) {
	f, ok := Raw(w).(*os.File) // a bar draws with escape sequences of its own
	return f, ok && term.IsTerminal(int(f.Fd()))
}

// Activity is an indeterminate progress display for work whose size is
// not known up front (a backlog being drained, pages being published).
// Lines printed through it do not tear the display. The zero Activity
// draws nothing.
type Activity struct {
	bar *progressbar.ProgressBar
}

// NewActivity returns an Activity described by desc, drawn on w when it
// is a terminal.
func NewActivity(w io.Writer, desc string) *Activity {
	f, ok := file(w)
	if !ok {
		return &Activity{}
	}
	return &Activity{bar: progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

// Print runs fn (which prints a line) without tearing the display.
func (p *Activity) Print(fn func()) {
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fn()
	if p.bar != nil {
		_ = p.bar.RenderBlank()
	}
}

// Describe says what is under way now.
func (p *Activity) Describe(desc string) {
	if p.bar != nil {
		p.bar.Describe(desc)
		_ = p.bar.Add(1)
	}
}

// Finish clears the display.
func (p *Activity) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// Progress returns a reporter of work of a known size (done of total
// units, described by the first report's desc), drawn on w when it is a
// terminal, and its finish. Where w is not a terminal, report is nil.
func Progress(w io.Writer, units string) (report func(done, total int64, desc string), finish func()) {
	f, ok := file(w)
	if !ok {
		return nil, func() {}
	}
	var bar *progressbar.ProgressBar
	return func(n, total int64, desc string) {
			if bar == nil {
				bar = progressbar.NewOptions64(max(total, 1), progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(desc),
					progressbar.OptionShowCount(), progressbar.OptionSetItsString(units), progressbar.OptionShowIts(),
					progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			}
			bar.ChangeMax64(max(n, bar.GetMax64()))
			_ = bar.Set64(n)
		}, func() {
			if bar != nil {
				_ = bar.Finish()
			}
		}
}
