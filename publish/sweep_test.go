package publish_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
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

// tamperGet returns a different body than the one stored, once.
type tamperGet struct {
	objstore.Store
	armed bool
}

func (s *tamperGet) Get(ctx context.Context, key string) (objstore.Object, error) {
	o, err := s.Store.Get(ctx, key)
	if err == nil && s.armed {
		s.armed = false
		o.Body = append(o.Body, "<!-- torn -->"...)
	}
	return o, err
}

func TestReadBackMismatchIsNotPublished(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		ev := f.mustEvent(t, "c1", "change", "evidence")
		s := f.mustAccept(t, ev, "The summary.", "m1")
		if _, err := f.svc.BindStore(ctx); err != nil { // the marker's read is not the one torn
			t.Fatal(err)
		}
		f.svc.Objects = &tamperGet{Store: f.objs, armed: true}
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
	lists                      []string
}

func (c *storeCalls) Get(ctx context.Context, key string) (objstore.Object, error) {
	c.mu.Lock()
	c.gets++
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

// TestASweepWithNothingToRepairReadsNoBody: what docs/publish.md says a
// sweep with nothing to repair costs: no body read, nothing written, the
// listings of the page and listing objects and two HEADs.
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
	f.svc.Objects = calls
	rep, err := f.svc.Sweep(ctx)
	if err != nil || rep.Republished+rep.Withdrawn+rep.Orphans+rep.Relinked+rep.Listings.Written+rep.Listings.Collected != 0 {
		t.Fatalf("sweep: %+v %v", rep, err)
	}
	slices.Sort(calls.lists)
	if calls.gets+calls.puts+calls.deletes != 0 || calls.heads != 2 || !slices.Equal(calls.lists, []string{"archive/", "changes/", "sources/"}) {
		t.Fatalf("a sweep with nothing to repair made %d gets, %d puts, %d deletes, %d heads and listed %v",
			calls.gets, calls.puts, calls.deletes, calls.heads, calls.lists)
	}
}

// TestAPublishingPassListsNoPageObjects: a publishing pass trusts the
// books for which pages the store holds (the read-back proved each one
// when it was marked, and the sweep records what went missing since), so
// it does not list every page object, however long the history; neither
// does the first card of a new source.
func TestAPublishingPassListsNoPageObjects(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		f.settle(t, f.src, tidemark.Item{Key: "a", Title: "first", Evidence: []byte("commit a\n\n    first\n")},
			tidemark.Item{Key: "b", Title: "second", Evidence: []byte("commit b\n\n    second\n")})
		f.mustSummarizeAndPublish(t)
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
		if slices.Contains(calls.lists, "changes/") {
			t.Fatalf("a publishing pass listed the page objects: %v", calls.lists)
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
		f := mustFixture(t, b, objs)
		f.settle(t, f.src, tidemark.Item{Key: "a", Title: "first", Evidence: []byte("commit a\n\n    first\n")},
			tidemark.Item{Key: "b", Title: "second", Evidence: []byte("commit b\n\n    second\n")})
		f.mustSummarizeAndPublish(t)
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
		if rep, err := f.svc.Sweep(ctx); err != nil || rep.Failed != 1 || rep.Missing != 1 {
			t.Fatalf("sweep: %+v %v, want the page's republication to fail and the page missing", rep, err)
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
