package publish_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A pass tells the progress function in its context of each summary and
// each page as it is done, one call at a time, and only once it is done:
// the step is already in the books when it is told.
func TestProgressIsToldEachStepAsItIsDone(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		f := mustFixture(t, b, mem.New())
		f.svc.Concurrency = 4
		for i := range 6 {
			f.mustEvent(t, fmt.Sprintf("k%d", i), fmt.Sprintf("change %d", i), fmt.Sprintf("evidence %d", i))
		}
		var (
			mu      sync.Mutex
			inCall  bool
			steps   = map[publish.Step]int{}
			errs    []string
			booksOK = func(step publish.Step, n int) {
				ctx := context.Background()
				switch step {
				case publish.StepSummarized:
					sums, err := f.st.Summaries(ctx, publish.SummaryFilter{})
					if err != nil || len(sums) < n {
						errs = append(errs, fmt.Sprintf("summary %d told with %d in the books (%v)", n, len(sums), err))
					}
				case publish.StepPublished:
					pages, err := f.st.PublishedCount(ctx)
					if err != nil || pages < n {
						errs = append(errs, fmt.Sprintf("page %d told with %d published in the books (%v)", n, pages, err))
					}
				}
			}
		)
		ctx := publish.WithProgress(context.Background(), func(s publish.Step) {
			mu.Lock()
			if inCall {
				errs = append(errs, "told two steps at once")
			}
			inCall = true
			steps[s]++
			n := steps[s]
			mu.Unlock()
			booksOK(s, n)
			mu.Lock()
			inCall = false
			mu.Unlock()
		})
		sum, err := f.svc.Summarize(ctx, &downAfter{n: 5}, 100)
		if err == nil || sum.Accepted != 5 || sum.Failed != 1 {
			t.Fatalf("summarize: %+v %v", sum, err)
		}
		pub, err := f.svc.PublishPending(ctx, 100)
		if err != nil || pub.Published != 5 {
			t.Fatalf("publish: %+v %v", pub, err)
		}
		if steps[publish.StepSummarized] != 5 || steps[publish.StepFailed] != 1 || steps[publish.StepPublished] != 5 {
			t.Errorf("steps told %v, want 5 summarized, 1 failed, 5 published", steps)
		}
		for _, e := range errs {
			t.Error(e)
		}
	})
}
