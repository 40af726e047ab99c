package publish_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize"
)

// downAfter summarizes n events, then its endpoint is down.
type downAfter struct {
	n, calls int
}

func (d *downAfter) Identity() (string, string) { return "m", "p1" }
func (d *downAfter) Summarize(ctx context.Context, in summarize.Input) (summarize.Draft, error) {
	d.calls++
	if d.calls > d.n {
		return summarize.Draft{}, fmt.Errorf("summarize %s: %w: connection refused", in.Event.ID, tidemark.ErrUnavailable)
	}
	return summarize.Draft{Text: "summary of " + in.Event.Title, Model: "m", PromptVersion: "p1"}, nil
}

// A summarizer that cannot be reached stops the round at its first
// unavailable answer instead of failing every remaining event; what was
// accepted before stays accepted.
func TestSummarizeStopsWhenSummarizerUnavailable(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		f := mustFixture(t, b, mem.New())
		for i := range 5 {
			f.mustEvent(t, fmt.Sprintf("k%d", i), fmt.Sprintf("change %d", i), fmt.Sprintf("evidence %d", i))
		}
		sum := &downAfter{n: 2}
		rep, err := f.svc.Summarize(context.Background(), sum, 100)
		if !errors.Is(err, tidemark.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
		if sum.calls != 3 {
			t.Errorf("summarizer called %d times, want 3 (stop at the first unavailable answer)", sum.calls)
		}
		if rep.Accepted != 2 || rep.Failed != 1 || rep.Considered != 3 {
			t.Errorf("report %+v, want 2 accepted, 1 failed of 3 considered", rep)
		}
		pub, err := f.svc.PublishPending(context.Background(), 100)
		if err != nil || pub.Published != 2 {
			t.Fatalf("publish after the outage: %+v, %v; want the 2 accepted summaries published", pub, err)
		}
	})
}
