package publish

import "context"

// Step is a unit of work a publishing pass has done, told as it is done to
// the function WithProgress put in the pass's context.
type Step int

const (
	// StepSummarized: an event's new summary was accepted.
	StepSummarized Step = iota
	// StepPublished: a page shows its current summary now.
	StepPublished
	// StepRelinked and StepRestyled: a page was republished because its
	// neighbours changed, or in this release's format.
	StepRelinked
	StepRestyled
	// StepWithdrawn: a page was taken off the wiki.
	StepWithdrawn
	// StepFailed: an event was not summarized, or a page not published
	// (counted in the report's Failed).
	StepFailed
)

type progressKey struct{}

// WithProgress returns ctx carrying fn: Summarize, PublishPending and
// PublishPendingPages run with it tell fn of each step as it is done, so a
// display can follow a pass of 1,000 pages as it goes rather than learn of
// it when it ends (as net/http/httptrace tells a request's events). fn is
// called one call at a time, after the step is in the books; it must be
// quick, since the pass waits for it.
func WithProgress(ctx context.Context, fn func(Step)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// told tells ctx's progress function, if any, of step.
func told(ctx context.Context, step Step) {
	if fn, ok := ctx.Value(progressKey{}).(func(Step)); ok && fn != nil {
		fn(step)
	}
}
