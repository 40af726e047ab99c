package publish_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A publication whose context is cancelled once its page body is written
// (a worker told to stop) still reads it back and marks it, so the books
// record the body the store holds: the store is never left ahead of the
// books until a sweep.
func TestCancelAfterTheWriteStillMarks(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		objs := mem.New()
		f := mustFixture(t, b, objs)
		ev := f.mustEvent(t, "c1", "change", "evidence")
		s := f.mustAccept(t, ev, "A change.", "m1")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		page := ""
		objs.SetHooks(mem.Hooks{AfterPut: func(_ context.Context, key string, _ objstore.Info) error {
			if key == page {
				cancel() // the worker is told to stop while the page is written
			}
			return nil
		}})
		plan, err := f.st.Prepare(context.Background(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		page = publish.PageKey(plan.PageID)
		res, err := f.svc.Publish(ctx, s.ID)
		if err != nil {
			t.Fatalf("publish cancelled after the write: %v", err)
		}
		mustPublished(t, f.mustSummary(t, s.ID), true)
		info, err := objs.Head(context.Background(), res.Key)
		if err != nil {
			t.Fatal(err)
		}
		var etag string
		if err := f.st.PageStates(context.Background(), func(ps publish.PageState) error { etag = ps.PublishedETag; return nil }); err != nil {
			t.Fatal(err)
		}
		if etag != info.ETag {
			t.Fatalf("the books record ETag %q, the store holds %q", etag, info.ETag)
		}
	})
}
