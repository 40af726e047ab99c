package publish_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A fault at any step boundary fails the publication, leaves the summary
// unpublished, and one sweep converges the page.
func TestFaultAtEachBoundaryConvergesAfterOneSweep(t *testing.T) {
	points := []string{"publish.after-precheck", "publish.after-card", "publish.after-object-write",
		"publish.after-read-back", "publish.mark.before-commit"}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for _, point := range points {
			t.Run(point, func(t *testing.T) {
				ctx := context.Background()
				f := mustFixture(t, b, mem.New())
				ev := f.mustEvent(t, "c1", "change", "evidence")
				s := f.mustAccept(t, ev, "The summary.", "m1")
				t.Cleanup(failpoint.Reset)
				if err := failpoint.Arm(point + "=error"); err != nil {
					t.Fatal(err)
				}
				_, err := f.svc.Publish(ctx, s.ID)
				var fp *failpoint.Error
				if !errors.As(err, &fp) || fp.Name != point {
					t.Fatalf("publish: %v, want the injected error at %s", err, point)
				}
				failpoint.Reset()
				mustPublished(t, f.mustSummary(t, s.ID), false)
				rep, err := f.svc.Sweep(ctx)
				if err != nil || rep.Republished != 1 || rep.Failed != 0 {
					t.Fatalf("sweep: %+v %v", rep, err)
				}
				mustPublished(t, f.mustSummary(t, s.ID), true)
			})
		}
	})
}

// tamperGet returns a different body than the one stored, always.
type tamperGet struct {
	objstore.Store
}

func (s *tamperGet) Get(ctx context.Context, key string) (objstore.Object, error) {
	o, err := s.Store.Get(ctx, key)
	if err == nil {
		o.Body = append(o.Body, "<!-- torn -->"...)
	}
	return o, err
}

// A write whose read-back differs is never marked published: the attempt
// is made again once (another writer may have torn the read), and a
// read-back that differs again fails it.
func TestReadBackMismatchIsNotPublished(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		ev := f.mustEvent(t, "c1", "change", "evidence")
		s := f.mustAccept(t, ev, "The summary.", "m1")
		if _, err := f.svc.BindStore(ctx); err != nil { // the marker's read is not the one torn
			t.Fatal(err)
		}
		f.svc.Objects = &tamperGet{Store: f.objs}
		if _, err := f.svc.Publish(ctx, s.ID); !errors.Is(err, publish.ErrReadBack) || !errors.Is(err, tidemark.ErrUnconfirmed) {
			t.Fatalf("publish: %v, want ErrReadBack", err)
		}
		mustPublished(t, f.mustSummary(t, s.ID), false)
	})
}

// The sweeper repairs what happened to the store behind the books' back,
// withdraws rejected pages, deletes orphans and collects cards attached to
// nothing.
func TestSweepRepairsTheStore(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for name, newStore := range stores(t) {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				f := mustFixture(t, b, newStore(t))
				var pages []string
				var sums []publish.Summary
				for _, key := range []string{"c1", "c2", "c3"} {
					ev := f.mustEvent(t, key, "change "+key, "evidence "+key)
					s := f.mustAccept(t, ev, "Summary of "+key+".", "m1")
					res, err := f.svc.Publish(ctx, s.ID)
					if err != nil {
						t.Fatal(err)
					}
					pages, sums = append(pages, res.PageID), append(sums, s)
				}
				if _, err := f.svc.RefreshListings(ctx); err != nil {
					t.Fatal(err)
				}
				// Behind the books' back: one page deleted, one overwritten,
				// an orphan page and a card of a source with no pages.
				if err := f.objs.Delete(ctx, publish.PageKey(pages[0])); err != nil {
					t.Fatal(err)
				}
				if _, err := f.objs.Put(ctx, publish.PageKey(pages[1]), []byte("defaced"), objstore.PutOptions{Generation: 1}); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"changes/nobody.html", "sources/gone.html"} {
					if _, err := f.objs.Put(ctx, k, []byte("x"), objstore.PutOptions{Generation: 1}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := f.st.Reject(ctx, sums[2].ID, "wrong"); err != nil {
					t.Fatal(err)
				}
				rep, err := f.svc.Sweep(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Pages != 3 || rep.Republished != 2 || rep.Withdrawn != 1 || rep.Orphans != 1 || rep.Listings.Collected != 1 || rep.Failed != 0 {
					t.Fatalf("sweep: %+v", rep)
				}
				f.mustPageShows(t, pages[0], "Summary of c1.", "")
				f.mustPageShows(t, pages[1], "Summary of c2.", "defaced")
				for _, k := range []string{publish.PageKey(pages[2]), "changes/nobody.html", "sources/gone.html"} {
					if _, err := f.objs.Head(ctx, k); !errors.Is(err, objstore.ErrNotFound) {
						t.Fatalf("%s survived the sweep: %v", k, err)
					}
				}
				idx, err := f.objs.Get(ctx, publish.IndexKey)
				if err != nil || contains(idx.Body, pages[2]) || !contains(idx.Body, pages[0]) {
					t.Fatalf("index after the sweep: %v\n%s", err, idx.Body)
				}
				rep, err = f.svc.Sweep(ctx)
				if err != nil || rep.Republished+rep.Withdrawn+rep.Orphans+rep.Listings.Written+rep.Listings.Collected != 0 {
					t.Fatalf("second sweep did work: %+v %v", rep, err)
				}
				// Every page withdrawn: the source's card is collected too.
				for _, s := range sums[:2] {
					if _, err := f.st.Reject(ctx, s.ID, "wrong"); err != nil {
						t.Fatal(err)
					}
				}
				rep, err = f.svc.Sweep(ctx)
				if err != nil || rep.Withdrawn != 2 || rep.Listings.Collected != 2 { // the card and its feed
					t.Fatalf("sweep after rejecting all: %+v %v", rep, err)
				}
				if _, err := f.objs.Head(ctx, publish.CardKey(f.src.ID)); !errors.Is(err, objstore.ErrNotFound) {
					t.Fatalf("card of a source with no pages survived: %v", err)
				}
			})
		}
	})
}

// storeCalls counts what is asked of the store it wraps.
type storeCalls struct {
	objstore.Store
	mu                         sync.Mutex
	gets, puts, deletes, heads int
	lists, got                 []string
}

func (c *storeCalls) Get(ctx context.Context, key string) (objstore.Object, error) {
	c.mu.Lock()
	c.gets++
	c.got = append(c.got, key)
	c.mu.Unlock()
	return c.Store.Get(ctx, key)
}

func (c *storeCalls) Put(ctx context.Context, key string, body []byte, o objstore.PutOptions) (objstore.Info, error) {
	c.mu.Lock()
	c.puts++
	c.mu.Unlock()
	return c.Store.Put(ctx, key, body, o)
}

func (c *storeCalls) Delete(ctx context.Context, key string) error {
	c.mu.Lock()
	c.deletes++
	c.mu.Unlock()
	return c.Store.Delete(ctx, key)
}

func (c *storeCalls) Head(ctx context.Context, key string) (objstore.Info, error) {
	c.mu.Lock()
	c.heads++
	c.mu.Unlock()
	return c.Store.Head(ctx, key)
}

func (c *storeCalls) List(ctx context.Context, prefix string, fn func(objstore.Info) error) error {
	c.mu.Lock()
	c.lists = append(c.lists, prefix)
	c.mu.Unlock()
	return c.Store.List(ctx, prefix, fn)
}

// absenceRecords counts the pages whose absence is recorded.
type absenceRecords struct {
	publish.Store
	records int
}

func (b *absenceRecords) RecordAbsence(ctx context.Context, store publish.StoreIdentity, found []publish.Absence) error {
	b.records += len(found)
	return b.Store.RecordAbsence(ctx, store, found)
}

// TestASweepWithNothingToRepairReadsNoBody: what docs/publish.md says a
// sweep with nothing to repair costs: no body read but the store's marker
// (it checks the store is the wiki's), nothing written, the listings of
// the page and listing objects and two HEADs.
func TestASweepWithNothingToRepairReadsNoBody(t *testing.T) {
	ctx := context.Background()
	f := mustFixture(t, sqltest.Backends()[0], mem.New())
	items := make([]tidemark.Item, publish.ListPageSize+3)
	for i := range items {
		items[i] = tidemark.Item{Key: fmt.Sprintf("c%03d", i), Title: fmt.Sprintf("change %d", i),
			Evidence: []byte(fmt.Sprintf("commit c%03d\n\n    change %d\n", i, i))}
	}
	f.settle(t, f.src, items...)
	f.mustSummarizeAndPublish(t)
	if _, err := f.svc.Sweep(ctx); err != nil { // binds the store; converges whatever the pass left
		t.Fatal(err)
	}
	calls := &storeCalls{Store: f.svc.Objects}
	books := &absenceRecords{Store: f.svc.Store}
	f.svc.Objects, f.svc.Store = calls, books
	rep, err := f.svc.Sweep(ctx)
	if err != nil || rep.Republished+rep.Withdrawn+rep.Orphans+rep.Relinked+rep.Listings.Written+rep.Listings.Collected != 0 {
		t.Fatalf("sweep: %+v %v", rep, err)
	}
	if books.records != 0 {
		t.Fatalf("a sweep with nothing to repair recorded %d pages' absence", books.records)
	}
	slices.Sort(calls.lists)
	if !slices.Equal(calls.got, []string{publish.StoreMarkerKey}) || calls.puts+calls.deletes != 0 || calls.heads != 2 ||
		!slices.Equal(calls.lists, []string{"archive/", "changes/", "sources/"}) {
		t.Fatalf("a sweep with nothing to repair read %v, made %d puts, %d deletes, %d heads and listed %v",
			calls.got, calls.puts, calls.deletes, calls.heads, calls.lists)
	}
}

// mustTwoPages is a fixture whose source has two changes, "a" and "b",
// published.
func mustTwoPages(t *testing.T, b sqltest.Backend, objs objstore.Store) *fixture {
	t.Helper()
	f := mustFixture(t, b, objs)
	f.settle(t, f.src, tidemark.Item{Key: "a", Title: "first", Evidence: []byte("commit a\n\n    first\n")},
		tidemark.Item{Key: "b", Title: "second", Evidence: []byte("commit b\n\n    second\n")})
	f.mustSummarizeAndPublish(t)
	return f
}

// TestAPublishingPassListsNoPageObjects: a publishing pass trusts the
// books for which pages the store holds (the read-back proved each one
// when it was marked, and the sweep records what went missing since), so
// it does not list every page object, however long the history; neither
// does the first card of a new source.
func TestAPublishingPassListsNoPageObjects(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustTwoPages(t, b, mem.New())
		other, err := f.db.Ingest().AddSource(ctx, ingest.NewSource{Name: "other", Kind: "git", Location: "/src/other", Interval: time.Hour, RetryBudget: 3})
		if err != nil {
			t.Fatal(err)
		}
		f.settle(t, f.src, tidemark.Item{Key: "c", Title: "third", Evidence: []byte("commit c\n\n    third\n")})
		f.settle(t, other, tidemark.Item{Key: "d", Title: "elsewhere", Evidence: []byte("commit d\n\n    elsewhere\n")})
		calls := &storeCalls{Store: f.svc.Objects}
		f.svc.Objects = calls
		if rep := f.mustSummarizeAndPublish(t); rep.Published != 2 {
			t.Fatalf("pass: %+v", rep)
		}
		for _, prefix := range calls.lists {
			if prefix != "sources/" && prefix != "archive/" { // the listing objects', to collect
				t.Fatalf("a publishing pass listed %q: %v", prefix, calls.lists)
			}
		}
		f.objs = calls
		for _, k := range []string{"a", "b", "c", "d"} {
			if !crawl(t, f, publish.IndexKey)[publish.PageKey(mustPageOf(t, f, k))] {
				t.Errorf("the index does not reach the page of %s", k)
			}
		}
	})
}

// TestAPageFoundMissingStaysUnlistedUntilRepublished: a page object
// deleted behind the books' back, which the sweep cannot republish, is
// recorded absent: the index and the card list it neither after that sweep
// nor after the publishing passes that follow, and list it again once a
// sweep has republished it.
func TestAPageFoundMissingStaysUnlistedUntilRepublished(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		objs := mem.New()
		f := mustTwoPages(t, b, objs)
		page := mustPageOf(t, f, "a")
		if err := objs.Delete(ctx, publish.PageKey(page)); err != nil {
			t.Fatal(err)
		}
		refuse := errors.New("the store refuses this page")
		objs.SetHooks(mem.Hooks{BeforePut: func(_ context.Context, key string, _ []byte, _ objstore.PutOptions) error {
			if key == publish.PageKey(page) {
				return refuse
			}
			return nil
		}})
		listed := func() bool {
			t.Helper()
			n := 0
			for _, key := range []string{publish.IndexKey, publish.CardKey(f.src.ID)} {
				o, err := objs.Get(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if contains(o.Body, page) {
					n++
				}
			}
			if n == 1 {
				t.Fatalf("the page is listed by one of the index and the card, not both")
			}
			return n == 2
		}
		if !listed() {
			t.Fatal("the page is not listed before it goes missing")
		}
		rep, err := f.svc.Sweep(ctx)
		if err != nil || rep.Failed != 1 || rep.Missing != 1 {
			t.Fatalf("sweep: %+v %v, want the page's republication to fail and the page missing", rep, err)
		}
		var text strings.Builder
		if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "1 published page is missing from the object store and listed nowhere") {
			t.Fatalf("the sweep's text does not say a page is missing: %v\n%s", err, text.String())
		}
		if listed() {
			t.Fatal("the sweep found the page missing and left it listed")
		}
		// A pass after the sweep keeps it out of the listings it rewrites.
		f.settle(t, f.src, tidemark.Item{Key: "c", Title: "third", Evidence: []byte("commit c\n\n    third\n")})
		if rep := f.mustSummarizeAndPublish(t); rep.Listings.Written == 0 {
			t.Fatalf("the pass rewrote no listing: %+v", rep)
		}
		if listed() {
			t.Fatal("a publishing pass listed the missing page again")
		}
		objs.SetHooks(mem.Hooks{})
		if rep, err := f.svc.Sweep(ctx); err != nil || rep.Republished != 1 || rep.Missing != 0 {
			t.Fatalf("sweep: %+v %v", rep, err)
		}
		if !listed() {
			t.Fatal("the republished page is not listed again")
		}
		if rep, err := f.svc.Sweep(ctx); err != nil || rep.Republished+rep.Listings.Written != 0 {
			t.Fatalf("a sweep after convergence did work: %+v %v", rep, err)
		}
	})
}

// withdrawRacer accepts a new summary for a page's event just before the
// sweep deletes the page's object, as an editor's new summary can land
// while a sweep withdraws a rejected page.
type withdrawRacer struct {
	objstore.Store
	before func()
}

func (w *withdrawRacer) Delete(ctx context.Context, key string) error {
	if w.before != nil {
		w.before()
		w.before = nil
	}
	return w.Store.Delete(ctx, key)
}

// TestASweepThatCannotWithdrawRecordsThePageMissing: the sweep deletes a
// rejected page's object, but a new summary was accepted meanwhile, so
// the page is not withdrawn: it is still published, its object is gone,
// and the books must say so, or every pass until the next sweep links to
// it.
func TestASweepThatCannotWithdrawRecordsThePageMissing(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		ev := f.mustEvent(t, "c1", "change", "evidence")
		s1 := f.mustAccept(t, ev, "The summary.", "m1")
		res, err := f.svc.Publish(ctx, s1.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.RefreshListings(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.Reject(ctx, s1.ID, "wrong"); err != nil {
			t.Fatal(err)
		}
		racer := &withdrawRacer{Store: f.objs, before: func() { f.mustAccept(t, ev, "The better summary.", "m2") }}
		f.svc.Objects = racer
		rep, err := f.svc.Sweep(ctx)
		if err != nil || rep.Withdrawn != 0 || rep.Missing != 1 {
			t.Fatalf("sweep: %+v %v, want nothing withdrawn and the page missing", rep, err)
		}
		var absent []string
		if err := f.st.AbsentPages(ctx, func(id, _ string) error { absent = append(absent, id); return nil }); err != nil || !slices.Equal(absent, []string{res.PageID}) {
			t.Fatalf("absent pages %v %v, want [%s]", absent, err, res.PageID)
		}
		idx, err := f.objs.Get(ctx, publish.IndexKey)
		if err != nil || contains(idx.Body, res.PageID) {
			t.Fatalf("the index links the page whose object is gone: %v", err)
		}
		// The next sweep publishes the new summary there.
		if rep, err := f.svc.Sweep(ctx); err != nil || rep.Republished != 1 || rep.Missing != 0 {
			t.Fatalf("next sweep: %+v %v", rep, err)
		}
		f.mustPageShows(t, res.PageID, "The better summary.", "")
	})
}

// TestRebindRecordsWhatTheNewStoreHolds: rebound to a copy of the wiki (a
// moved wiki), the listings keep every page; rebound to an emptied store,
// they list none until a sweep republishes them.
func TestRebindRecordsWhatTheNewStoreHolds(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustTwoPages(t, b, mem.New())
		copied := mem.New()
		if err := f.objs.List(ctx, "", func(in objstore.Info) error {
			o, err := f.objs.Get(ctx, in.Key)
			if err == nil {
				_, err = copied.Put(ctx, in.Key, o.Body, objstore.PutOptions{Generation: o.Generation})
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		moved := &publish.Service{Store: f.st, Objects: copied, StoreLocation: "mem://two"}
		if _, err := moved.Rebind(ctx); err != nil {
			t.Fatal(err)
		}
		f.svc, f.objs = moved, copied
		f.settle(t, f.src, tidemark.Item{Key: "c", Title: "third", Evidence: []byte("commit c\n\n    third\n")})
		f.mustSummarizeAndPublish(t)
		idx, err := copied.Get(ctx, publish.IndexKey)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a", "b", "c"} {
			if !contains(idx.Body, mustPageOf(t, f, k)) {
				t.Errorf("after the move the index does not list %s", k)
			}
		}
		emptied := &publish.Service{Store: f.st, Objects: mem.New(), StoreLocation: "mem://three"}
		if _, err := emptied.Rebind(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := emptied.Missing(ctx); err != nil || n != 3 {
			t.Fatalf("missing after a rebind to an empty store: %d %v, want 3", n, err)
		}
	})
}

// A page file edited in place by hand in a directory store (its sidecar
// untouched) is republished by the next sweep, as an object overwritten
// behind the books' back in any other store is.
func TestSweepRepairsAPageEditedByHandInADirectory(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		objs, err := dir.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		f := mustFixture(t, b, objs)
		ev := f.mustEvent(t, "c1", "change c1", "evidence c1")
		s := f.mustAccept(t, ev, "Summary of c1.", "m1")
		res, err := f.svc.Publish(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(objs.Root(), filepath.FromSlash(res.Key))
		if err := os.WriteFile(p, []byte("HACKED BY HAND\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Later than the store wrote it, whatever the filesystem's clock.
		at := time.Now().Add(time.Minute)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		rep, err := f.svc.Sweep(ctx)
		if err != nil || rep.Republished != 1 || rep.Failed != 0 {
			t.Fatalf("sweep after a hand edit: %+v %v", rep, err)
		}
		f.mustPageShows(t, res.PageID, "Summary of c1.", "HACKED")
		if rep, err := f.svc.Sweep(ctx); err != nil || rep.Republished != 0 {
			t.Fatalf("second sweep: %+v %v", rep, err)
		}
	})
}
