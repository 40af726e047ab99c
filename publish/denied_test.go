package publish_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A store that refuses our credentials refuses every page alike, so the
// first refusal ends the pass: no more publications start (a pass of
// 1,000 pages does not ask 1,000 times), and the refusal is returned as
// the pass's error rather than counted as one page's failure.
func TestPublishStopsAtTheStoresRefusal(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		objs := mem.New()
		f := mustFixture(t, b, objs)
		f.svc.Concurrency = 1
		for i := range 5 {
			ev := f.mustEvent(t, fmt.Sprintf("c%d", i), "change", "evidence")
			f.mustAccept(t, ev, "Summary.", "m1")
		}
		var puts atomic.Int32
		objs.SetHooks(mem.Hooks{BeforePut: func(ctx context.Context, key string, body []byte, opt objstore.PutOptions) error {
			if !strings.HasPrefix(key, "changes/") {
				return nil
			}
			puts.Add(1)
			return fmt.Errorf("put %s: %w", key, objstore.ErrDenied)
		}})
		rep, err := f.svc.PublishPending(ctx, 10)
		if !errors.Is(err, objstore.ErrDenied) {
			t.Fatalf("PublishPending: %v (%+v), want the store's refusal", err, rep)
		}
		if n := puts.Load(); n != 1 {
			t.Fatalf("%d pages were written after the store refused the first, want none", n-1)
		}
		if rep.Published != 0 {
			t.Fatalf("published %d", rep.Published)
		}
	})
}
