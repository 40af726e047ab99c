package publish_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize/extractive"
)

// A publishing pass takes off the wiki what the books say must go, as a
// sweep does, without listing the store: the page of a rejected summary
// (withdrawn, its object deleted), and the pages of a source removed with
// --force (whose rows are gone: the removal recorded their keys). What
// `publish` and `run --once` leave is a wiki without them, and the next
// pass has nothing left to take off.
func TestAPassWithdrawsRejectedAndRemovedPages(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		objs := mem.New()
		f := mustFixture(t, b, objs)
		other, err := f.db.Ingest().AddSource(ctx, ingest.NewSource{Name: "other", Kind: "git", Location: "/src/other", Interval: time.Hour, RetryBudget: 3})
		if err != nil {
			t.Fatal(err)
		}
		f.settle(t, f.src, tidemark.Item{Key: "c1", Title: "kept change", Evidence: []byte("a")},
			tidemark.Item{Key: "c2", Title: "rejected change", Evidence: []byte("b")})
		f.settle(t, other, tidemark.Item{Key: "o1", Title: "removed change", Evidence: []byte("c")})
		if rep := f.mustSummarizeAndPublish(t); rep.Published != 3 {
			t.Fatalf("published %d pages, want 3", rep.Published)
		}
		pageOf := func(title string) string {
			t.Helper()
			evs, err := f.db.Ingest().Events(ctx, ingest.EventFilter{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Title == title {
					id, ok, err := f.st.PublishedPage(ctx, ev.ID)
					if err != nil || !ok {
						t.Fatalf("page of %q: %v %v", title, ok, err)
					}
					return id
				}
			}
			t.Fatalf("no event %q", title)
			return ""
		}
		kept, rejected, removed := pageOf("kept change"), pageOf("rejected change"), pageOf("removed change")
		evs, err := f.db.Ingest().Events(ctx, ingest.EventFilter{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Title == "rejected change" {
				sum, err := f.st.CurrentSummary(ctx, ev.ID)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.st.Reject(ctx, sum, "wrong"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := f.db.Ingest().RemoveSource(ctx, "other", "ops", true); err != nil {
			t.Fatal(err)
		}
		rep, err := f.svc.PublishPending(ctx, 100)
		if err != nil || rep.Failed != 0 {
			t.Fatalf("pass: %+v %v", rep, err)
		}
		if rep.Withdrawn != 2 {
			t.Errorf("the pass withdrew %d pages, want 2 (the rejected one and the removed source's)", rep.Withdrawn)
		}
		for _, id := range []string{rejected, removed} {
			if _, err := objs.Get(ctx, publish.PageKey(id)); !errors.Is(err, objstore.ErrNotFound) {
				t.Errorf("page %s is still in the store after the pass: %v", id, err)
			}
		}
		if _, err := objs.Get(ctx, publish.PageKey(kept)); err != nil {
			t.Fatalf("the kept page: %v", err)
		}
		if _, ok, err := f.st.PublishedPage(ctx, evs[0].ID); err != nil {
			t.Fatal(err)
		} else if ok && evs[0].Title == "rejected change" {
			t.Errorf("the rejected page is still published in the books")
		}
		index, err := objs.Get(ctx, "index.html")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(index.Body), rejected) || strings.Contains(string(index.Body), removed) || !strings.Contains(string(index.Body), kept) {
			t.Errorf("the index after the pass:\n%s", index.Body)
		}
		again, err := f.svc.PublishPending(ctx, 100)
		if err != nil || again.Withdrawn != 0 {
			t.Fatalf("a second pass: %+v %v, want nothing left to withdraw", again, err)
		}
		if st, err := f.st.PublishStats(ctx); err != nil || st.Withdrawing != 0 {
			t.Fatalf("stats after the pass: %+v %v", st, err)
		}
	})
}

// A sweep deletes the pages of a removed source by the removal's record,
// counted as withdrawn rather than as orphans, and forgets the record.
func TestASweepWithdrawsARemovedSourcesPages(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		objs := mem.New()
		f := mustFixture(t, b, objs)
		f.settle(t, f.src, tidemark.Item{Key: "c1", Title: "a change", Evidence: []byte("a")},
			tidemark.Item{Key: "c2", Title: "another", Evidence: []byte("b")})
		f.mustSummarizeAndPublish(t)
		if _, err := f.db.Ingest().RemoveSource(ctx, f.src.Name, "ops", true); err != nil {
			t.Fatal(err)
		}
		rep, err := f.svc.Sweep(ctx)
		if err != nil || rep.Withdrawn != 2 || rep.Orphans != 0 || rep.Failed != 0 {
			t.Fatalf("sweep: %+v %v, want 2 withdrawn and no orphans", rep, err)
		}
		left := 0
		if err := objs.List(ctx, "changes/", func(objstore.Info) error { left++; return nil }); err != nil || left != 0 {
			t.Fatalf("%d change objects left (%v)", left, err)
		}
		if ids, err := f.st.RemovedPages(ctx, 10); err != nil || len(ids) != 0 {
			t.Fatalf("removal records left: %v %v", ids, err)
		}
	})
}

// A page shows its source's name; renaming the source makes every page
// of it stale, and the next publishing round republishes them (counted
// with the restyled pages: what they show besides their summary changed),
// so no page keeps the old name.
func TestARenamedSourcesPagesShowTheNewName(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		objs := mem.New()
		f := mustFixture(t, b, objs)
		f.settle(t, f.src, tidemark.Item{Key: "c1", Title: "a change", Evidence: []byte("a")},
			tidemark.Item{Key: "c2", Title: "another", Evidence: []byte("b")})
		f.mustSummarizeAndPublish(t)
		if _, err := f.db.Ingest().RenameSource(ctx, f.src.Name, "renamed-repo", "ops"); err != nil {
			t.Fatal(err)
		}
		rep, err := f.svc.PublishPending(ctx, 100)
		if err != nil || rep.Restyled != 2 || rep.Failed != 0 {
			t.Fatalf("the round after the rename: %+v %v, want both pages republished", rep, err)
		}
		n := 0
		if err := objs.List(ctx, "changes/", func(in objstore.Info) error {
			o, err := objs.Get(ctx, in.Key)
			if err != nil {
				return err
			}
			if !strings.Contains(string(o.Body), "renamed-repo") || strings.Contains(string(o.Body), ">"+f.src.Name+"<") {
				t.Errorf("page %s after the rename:\n%s", in.Key, o.Body)
			}
			n++
			return nil
		}); err != nil || n != 2 {
			t.Fatalf("%d pages (%v)", n, err)
		}
		if again, err := f.svc.PublishPending(ctx, 100); err != nil || again.Restyled != 0 {
			t.Fatalf("a second round: %+v %v, want nothing to republish", again, err)
		}
	})
}

// renameBeforeMark renames the source once, between a publication's
// rendering and its mark: a rename that commits while a page is written.
type renameBeforeMark struct {
	publish.Store
	rename func()
}

func (r *renameBeforeMark) Mark(ctx context.Context, p publish.Plan, w publish.Written) (tidemark.Publication, error) {
	if r.rename != nil {
		r.rename()
		r.rename = nil
	}
	return r.Store.Mark(ctx, p, w)
}

// A page rendered with the old name and marked after the rename committed
// still ends up showing the new one: the mark does not record the current
// format for a page that shows a name its source no longer has, so the
// pass's own restyle step republishes it.
func TestARenameDuringAPublicationIsNotLost(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		objs := mem.New()
		f := mustFixture(t, b, objs)
		f.settle(t, f.src, tidemark.Item{Key: "c1", Title: "a change", Evidence: []byte("a")})
		if _, err := f.svc.Summarize(ctx, extractive.Summarizer{}, 10); err != nil {
			t.Fatal(err)
		}
		f.svc.Store = &renameBeforeMark{Store: f.st, rename: func() {
			if _, err := f.db.Ingest().RenameSource(ctx, f.src.Name, "renamed-repo", "ops"); err != nil {
				t.Fatal(err)
			}
		}}
		if rep, err := f.svc.PublishPending(ctx, 10); err != nil || rep.Published != 1 {
			t.Fatalf("publish: %+v %v", rep, err)
		}
		f.svc.Store = f.st
		var shown string
		if err := objs.List(ctx, "changes/", func(in objstore.Info) error {
			o, err := objs.Get(ctx, in.Key)
			shown = string(o.Body)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(shown, "renamed-repo") {
			t.Fatalf("the page after the pass still shows the old name:\n%s", shown)
		}
		if rep, err := f.svc.PublishPending(ctx, 10); err != nil || rep.Restyled != 0 {
			t.Fatalf("the round after: %+v %v, want nothing left to republish", rep, err)
		}
	})
}

// publishWhileWithdrawing publishes the page again, once, between a pass's
// read of the pages to withdraw and its withdrawal: another worker's
// publication of a summary accepted meanwhile.
type publishWhileWithdrawing struct {
	publish.Store
	meanwhile func()
}

func (w *publishWhileWithdrawing) Withdrawable(ctx context.Context, limit int) ([]publish.Absence, error) {
	out, err := w.Store.Withdrawable(ctx, limit)
	if w.meanwhile != nil && len(out) > 0 {
		w.meanwhile()
		w.meanwhile = nil
	}
	return out, err
}

// A page published anew while a pass withdraws it (a summary accepted
// meanwhile, published by another worker) loses its object to the
// withdrawal's delete, which no store can make conditional; the books
// then record it missing at the generation now published, so no listing
// links to it until it is republished.
func TestAPagePublishedWhileItIsWithdrawnIsRecordedMissing(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		objs := mem.New()
		f := mustFixture(t, b, objs)
		ev := f.mustEvent(t, "c1", "a change", "evidence")
		s1 := f.mustAccept(t, ev, "First text.", "m1")
		if _, err := f.svc.Publish(ctx, s1.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.Reject(ctx, s1.ID, "wrong"); err != nil {
			t.Fatal(err)
		}
		other := &publish.Service{Store: f.st, Objects: objs}
		f.svc.Store = &publishWhileWithdrawing{Store: f.st, meanwhile: func() {
			s2 := f.mustAccept(t, ev, "Second text.", "m2")
			if _, err := other.Publish(ctx, s2.ID); err != nil {
				t.Fatal(err)
			}
		}}
		if _, err := f.svc.PublishPending(ctx, 10); err != nil {
			t.Fatal(err)
		}
		pageID, ok, err := f.st.PublishedPage(ctx, ev.ID)
		if err != nil || !ok {
			t.Fatalf("the page: %v %v, want it published with the second summary", ok, err)
		}
		if _, err := objs.Get(ctx, publish.PageKey(pageID)); err == nil {
			return // the pass republished it: as good
		}
		missing := false
		if err := f.st.AbsentPages(ctx, func(id, _ string) error { missing = missing || id == pageID; return nil }); err != nil {
			t.Fatal(err)
		}
		if !missing {
			t.Fatalf("page %s is published, its object is gone, and the books do not record it missing", pageID)
		}
	})
}
