package publish_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/objstore/objstoretest"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A newer summary is accepted in the middle of the older publish's page
// write. The older publish must fail, and the page must end up showing the
// newer summary, which alone is published and current.
func TestRaceNewerAcceptedInsideObjectWrite(t *testing.T) {
	for _, variant := range []string{"accepted", "accepted-and-published"} {
		t.Run(variant, func(t *testing.T) {
			sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
				ctx := context.Background()
				objs := mem.New()
				f := mustFixture(t, b, objs)
				ev := f.mustEvent(t, "c1", "change", "evidence")
				s1 := f.mustAccept(t, ev, "Older summary.", "m1")
				var s2ID string
				var fired atomic.Bool
				objs.SetHooks(mem.Hooks{BeforePut: func(ctx context.Context, key string, body []byte, opt objstore.PutOptions) error {
					if !strings.HasPrefix(key, "changes/") || !strings.Contains(string(body), "Older summary.") || !fired.CompareAndSwap(false, true) {
						return nil
					}
					s2 := f.mustAccept(t, ev, "Newer summary.", "m2")
					s2ID = s2.ID
					if variant == "accepted-and-published" {
						if _, err := f.svc.Publish(ctx, s2.ID); err != nil {
							t.Errorf("publish newer inside the older write: %v", err)
						}
					}
					return nil
				}})
				res, err := f.svc.Publish(ctx, s1.ID)
				if !fired.Load() {
					t.Fatal("hook never fired")
				}
				if err == nil {
					t.Fatal("the older publish succeeded")
				}
				if !isAny(err, publish.ErrLostRace, objstore.ErrNewerGeneration) {
					t.Fatalf("older publish: %v, want ErrLostRace or ErrNewerGeneration", err)
				}
				if variant == "accepted" && (res.Repaired == nil || res.Repaired.SummaryID != s2ID) {
					t.Fatalf("no repair with the newer summary: %+v", res)
				}
				f.mustPageShows(t, res.PageID, "Newer summary.", "Older summary.")
				old, newer := f.mustSummary(t, s1.ID), f.mustSummary(t, s2ID)
				mustPublished(t, old, false)
				mustPublished(t, newer, true)
				if old.Current || !newer.Current {
					t.Fatalf("current: old %v newer %v", old.Current, newer.Current)
				}
				// Nothing is left for the sweeper.
				rep, err := f.svc.Sweep(ctx)
				if err != nil || rep.Republished != 0 || rep.Failed != 0 {
					t.Fatalf("sweep after the race: %+v %v", rep, err)
				}
			})
		})
	}
}

// generationLog wraps a store and records the generation of every
// successful page write, to prove generations only move forward.
type generationLog struct {
	objstore.Store
	mu   sync.Mutex
	gens []int64
}

func (g *generationLog) Put(ctx context.Context, key string, body []byte, opt objstore.PutOptions) (objstore.Info, error) {
	info, err := g.Store.Put(ctx, key, body, opt)
	if err == nil && strings.HasPrefix(key, "changes/") {
		g.mu.Lock()
		g.gens = append(g.gens, opt.Generation)
		g.mu.Unlock()
	}
	return info, err
}

// Two publishers race on one page through the stores' conditional writes:
// the older summary (pre-checked before the newer was accepted) and the
// newer. Every order of their store operations is tried: the older body
// never replaces the newer, and the page ends on the newer summary.
func TestConditionalWriteRaceEveryOrder(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for name, newStore := range stores(t) {
			t.Run(name, func(t *testing.T) {
				// Every order runs against SQLite and the in-process stores.
				// The orders are the store's, so the other backends try a
				// sample: S3 a quarter of them, PostgreSQL (whose fresh
				// database per order costs a second) one in sixteen.
				schedules := objstoretest.Schedules(2, 3, 2)
				switch {
				case b.Name == "postgres":
					schedules = everyNth(schedules, 16)
				case name == "s3":
					schedules = everyNth(schedules, 4)
				}
				if testing.Short() {
					// CI's -race pass runs -short: a sample of the orders
					// finds a data race as well; the full run tries them all.
					schedules = everyNth(schedules, 8)
				}
				for _, sched := range schedules {
					t.Run(fmt.Sprint(sched), func(t *testing.T) { raceOnce(t, b, newStore(t), sched) })
				}
			})
		}
	})
}

func everyNth[T any](xs []T, n int) []T {
	var out []T
	for i := 0; i < len(xs); i += n {
		out = append(out, xs[i])
	}
	return out
}

func raceOnce(t *testing.T, b sqltest.Backend, store objstore.Store, sched []int) {
	ctx := context.Background()
	log := &generationLog{Store: store}
	f := mustFixture(t, b, log)
	// A published page of another event, so the source card exists and the
	// race is about the page alone.
	other := f.mustEvent(t, "c0", "other", "other evidence")
	if _, err := f.svc.Publish(ctx, f.mustAccept(t, other, "Other.", "m1").ID); err != nil {
		t.Fatal(err)
	}
	ev := f.mustEvent(t, "c1", "change", "evidence")
	s1 := f.mustAccept(t, ev, "Older summary.", "m1")
	log.gens = nil

	// Each writer's service checks the store's identity before the race,
	// so the schedule orders the publications' operations alone.
	obj1, obj2 := &swappable{Store: log}, &swappable{Store: log}
	svc1 := &publish.Service{Store: f.svc.Store, Objects: obj1}
	svc2 := &publish.Service{Store: f.svc.Store, Objects: obj2}
	for _, svc := range []*publish.Service{svc1, svc2} {
		if _, err := svc.BindStore(ctx); err != nil {
			t.Fatal(err)
		}
	}
	prepared := make(chan struct{})
	var once sync.Once
	var s2ID string
	errs := objstoretest.RunSchedule(t, log, sched,
		func(ctx context.Context, s objstore.Store) error {
			obj1.Store = &signalFirst{Store: s, first: func() { once.Do(func() { close(prepared) }) }}
			svc := svc1
			_, err := svc.Publish(ctx, s1.ID)
			once.Do(func() { close(prepared) })
			return err
		},
		func(ctx context.Context, s objstore.Store) error {
			<-prepared // the older summary passed its pre-checks
			s2 := f.mustAccept(t, ev, "Newer summary.", "m2")
			s2ID = s2.ID
			obj2.Store = s
			svc := svc2
			_, err := svc.Publish(ctx, s2.ID)
			return err
		})
	if errs[0] == nil {
		t.Fatal("the older publish succeeded")
	}
	if errs[1] != nil && !isAny(errs[1], objstore.ErrNewerGeneration, publish.ErrNewerPublished) {
		t.Fatalf("newer publish: %v", errs[1])
	}
	for i := 1; i < len(log.gens); i++ {
		if log.gens[i] <= log.gens[i-1] {
			t.Fatalf("page generations written out of order: %v", log.gens)
		}
	}
	page, _ := f.st.CurrentSummary(ctx, ev.ID)
	if page != s2ID {
		t.Fatalf("pointer %s, want %s", page, s2ID)
	}
	sum := f.mustSummary(t, s2ID)
	mustPublished(t, sum, true)
	mustPublished(t, f.mustSummary(t, s1.ID), false)
	var pageID string
	_ = f.st.PageStates(ctx, func(ps publish.PageState) error {
		if ps.EventID == ev.ID {
			pageID = ps.PageID
		}
		return nil
	})
	f.mustPageShows(t, pageID, "Newer summary.", "Older summary.")
}

// signalFirst calls first before the first store operation.
type signalFirst struct {
	objstore.Store
	first func()
}

func (s *signalFirst) Head(ctx context.Context, key string) (objstore.Info, error) {
	s.first()
	return s.Store.Head(ctx, key)
}

// A repair that fails leaves a stale page; one sweep converges it.
func TestFailedRepairConvergesAfterOneSweep(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for name, newStore := range stores(t) {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				f := mustFixture(t, b, newStore(t))
				ev := f.mustEvent(t, "c1", "change", "evidence")
				s1 := f.mustAccept(t, ev, "Older summary.", "m1")
				var s2ID string
				// The newer summary is accepted between the older one's
				// object write and its mark; the repair then fails.
				t.Cleanup(failpoint.Reset)
				if err := failpoint.Arm("publish.before-repair=error"); err != nil {
					t.Fatal(err)
				}
				f.svc.Store = &beforeFirstMark{Store: f.st, hook: func() { s2ID = f.mustAccept(t, ev, "Newer summary.", "m2").ID }}
				res, err := f.svc.Publish(ctx, s1.ID)
				var fpErr *failpoint.Error
				if !errors.Is(err, publish.ErrLostRace) || !errors.As(err, &fpErr) {
					t.Fatalf("publish: %v, want ErrLostRace and the repair's injected error", err)
				}
				failpoint.Reset()
				f.svc.Store = f.st
				// Stale: the page shows the older summary, nothing is published.
				f.mustPageShows(t, res.PageID, "Older summary.", "")
				mustPublished(t, f.mustSummary(t, s2ID), false)

				rep, err := f.svc.Sweep(ctx)
				if err != nil || rep.Republished != 1 || rep.Failed != 0 {
					t.Fatalf("sweep: %+v %v", rep, err)
				}
				f.mustPageShows(t, res.PageID, "Newer summary.", "Older summary.")
				mustPublished(t, f.mustSummary(t, s2ID), true)
				mustPublished(t, f.mustSummary(t, s1.ID), false)
				if rep, err := f.svc.Sweep(ctx); err != nil || rep.Republished != 0 || rep.Listings.Written != 0 {
					t.Fatalf("second sweep did work: %+v %v", rep, err)
				}
			})
		}
	})
}

// beforeFirstMark runs hook once, just before the first Mark: between
// the page's write and its mark (a newer summary accepted, or the summary
// rejected, in that gap).
type beforeFirstMark struct {
	publish.Store
	hook func()
	done bool
}

func (b *beforeFirstMark) Mark(ctx context.Context, p publish.Plan, w publish.Written) (publishPublication, error) {
	if !b.done {
		b.done = true
		b.hook()
	}
	return b.Store.Mark(ctx, p, w)
}

// swappable is an object store whose backing store a test replaces after
// the service using it has checked the store's identity.
type swappable struct{ objstore.Store }

// A summary rejected while its publication is in flight (after the page
// is written, before the mark) loses the mark with nothing current to
// repair onto: the loser withdraws the page it wrote, so no rejected
// summary stays on the wiki until a sweep. Whether the page was published
// before (with the summary the rejected one superseded) or never.
func TestRejectedInsideThePublicationIsWithdrawnByTheLoser(t *testing.T) {
	for _, variant := range []string{"first-publication", "republication"} {
		t.Run(variant, func(t *testing.T) {
			sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
				for name, newStore := range stores(t) {
					t.Run(name, func(t *testing.T) {
						ctx := context.Background()
						f := mustFixture(t, b, newStore(t))
						ev := f.mustEvent(t, "c1", "change", "evidence")
						if variant == "republication" {
							s0 := f.mustAccept(t, ev, "Earlier summary.", "m0")
							if _, err := f.svc.Publish(ctx, s0.ID); err != nil {
								t.Fatal(err)
							}
						}
						s1 := f.mustAccept(t, ev, "Rejected summary.", "m1")
						f.svc.Store = &beforeFirstMark{Store: f.st, hook: func() {
							if _, err := f.st.Reject(ctx, s1.ID, "wrong"); err != nil {
								t.Errorf("reject: %v", err)
							}
						}}
						res, err := f.svc.Publish(ctx, s1.ID)
						f.svc.Store = f.st
						if !errors.Is(err, publish.ErrLostRace) {
							t.Fatalf("publish: %v, want ErrLostRace", err)
						}
						if _, err := f.objs.Get(ctx, publish.PageKey(res.PageID)); !errors.Is(err, objstore.ErrNotFound) {
							t.Fatalf("the rejected summary's page is still in the store: %v", err)
						}
						mustPublished(t, f.mustSummary(t, s1.ID), false)
						if n, err := f.st.PublishedCount(ctx); err != nil || n != 0 {
							t.Fatalf("published pages: %d, %v; want none", n, err)
						}
						// Nothing is left for the sweeper.
						rep, err := f.svc.Sweep(ctx)
						if err != nil || rep.Withdrawn != 0 || rep.Orphans != 0 || rep.Republished != 0 || rep.Failed != 0 {
							t.Fatalf("sweep after the loser: %+v %v", rep, err)
						}
					})
				}
			})
		})
	}
}
