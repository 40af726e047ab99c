package publish_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/dir"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/objstore/objstoretest"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// pagePuts is one publisher's view of an object store: before each of its
// page writes (changes/…), counting from 1, it runs hooks[n] if there is
// one, so a test can run another publisher in the middle of this one's.
type pagePuts struct {
	objstore.Store
	mu    sync.Mutex
	n     int
	hooks map[int]func()
	// refused counts the page writes whose condition the store refused
	// (If-None-Match or If-Match: another writer came first).
	refused int
}

func (p *pagePuts) Put(ctx context.Context, key string, body []byte, opt objstore.PutOptions) (objstore.Info, error) {
	if !strings.HasPrefix(key, "changes/") {
		return p.Store.Put(ctx, key, body, opt)
	}
	p.mu.Lock()
	p.n++
	hook := p.hooks[p.n]
	p.mu.Unlock()
	if hook != nil {
		hook()
	}
	info, err := p.Store.Put(ctx, key, body, opt)
	if errors.Is(err, objstore.ErrPrecondition) {
		p.mu.Lock()
		p.refused++
		p.mu.Unlock()
	}
	return info, err
}

// storePairs are, for each object store, two clients of one store, as two
// processes would open it: two directory stores over one directory (their
// compare-and-swap decided under the directory's lock files), two S3
// clients of one bucket and prefix (decided by the server's If-Match and
// If-None-Match). The in-memory store has one client.
func storePairs(t *testing.T) map[string]func(t *testing.T) (objstore.Store, objstore.Store) {
	return map[string]func(t *testing.T) (objstore.Store, objstore.Store){
		"mem": func(t *testing.T) (objstore.Store, objstore.Store) { s := mem.New(); return s, s },
		"dir": func(t *testing.T) (objstore.Store, objstore.Store) {
			root := t.TempDir()
			a, err := dir.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			b, err := dir.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			return a, b
		},
		"s3": func(t *testing.T) (objstore.Store, objstore.Store) {
			a := objstoretest.S3(t, "")
			return a, objstoretest.S3(t, a.Prefix())
		},
	}
}

// failMark fails every mark, as a publisher that died between its write
// and its mark would leave the page: a newer generation in the store that
// nobody marks.
type failMark struct{ publish.Store }

var errMarkInjected = errors.New("injected: the publisher died before its mark")

func (f failMark) Mark(context.Context, publish.Plan, publish.Written) (publishPublication, error) {
	return publishPublication{}, errMarkInjected
}

// pageOf is the page of ev and what the books say of it.
func (f *fixture) pageOf(t *testing.T, eventID string) publish.PageState {
	t.Helper()
	var out publish.PageState
	if err := f.st.PageStates(context.Background(), func(ps publish.PageState) error {
		if ps.EventID == eventID {
			out = ps
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if out.PageID == "" {
		t.Fatalf("event %s has no page", eventID)
	}
	return out
}

// mustConverged asserts the page shows text at the generation the books
// mark published, and that a sweep finds nothing to do.
func (f *fixture) mustConverged(t *testing.T, eventID, summaryID, text string) {
	t.Helper()
	ps := f.pageOf(t, eventID)
	if ps.PublishedSummaryID != summaryID {
		t.Fatalf("page %s is marked with summary %q, want %s", ps.PageID, ps.PublishedSummaryID, summaryID)
	}
	o := f.mustPageShows(t, ps.PageID, text, "")
	if o.Generation != ps.PublishedGeneration || o.ETag != ps.PublishedETag {
		t.Fatalf("page %s: the store holds generation %d (%s), the books mark %d (%s)",
			ps.PageID, o.Generation, o.ETag, ps.PublishedGeneration, ps.PublishedETag)
	}
	rep, err := f.svc.Sweep(context.Background())
	if err != nil || rep.Republished != 0 || rep.Failed != 0 || rep.Superseded != 0 {
		t.Fatalf("sweep after the race: %+v %v", rep, err)
	}
}

// Two publishing passes over one database and one store (two RunOnce in a
// process, `run --once` beside a daemon, each with a client of the store
// of its own) both find a summary pending. The other pass publishes it
// while this one is between its pre-checks and its write (its write is
// then refused by the store's compare-and-swap: If-None-Match on a first
// publication, If-Match on a republication), or between its write and
// its mark: this one then finds a newer generation of its page, marked
// published with the very summary it set out to publish. The page is
// published: this pass reports no failure (it counts the page published
// elsewhere), and nothing is left for a sweep.
func TestTwoPassesPublishingOnePageDoNotFailIt(t *testing.T) {
	for _, tc := range []struct{ gap, page string }{
		{"before-write", "first"}, {"before-write", "republished"}, {"before-mark", "first"}, {"before-mark", "republished"},
	} {
		t.Run(tc.gap+"/"+tc.page, func(t *testing.T) {
			gap := tc.gap
			sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
				for name, newStores := range storePairs(t) {
					t.Run(name, func(t *testing.T) {
						ctx := context.Background()
						store, storeB := newStores(t)
						f := mustFixture(t, b, store)
						ev := f.mustEvent(t, "c1", "change", "evidence")
						if tc.page == "republished" {
							if _, err := f.svc.Publish(ctx, f.mustAccept(t, ev, "The earlier summary.", "m0").ID); err != nil {
								t.Fatal(err)
							}
						}
						s := f.mustAccept(t, ev, "The change.", "m1")
						objsA := &pagePuts{Store: store}
						svcA := &publish.Service{Store: f.st, Objects: objsA}
						svcB := &publish.Service{Store: f.st, Objects: storeB}
						var repB publish.PublishReport
						var errB error
						ran := false
						other := func() { ran = true; repB, errB = svcB.PublishPending(ctx, 100) }
						switch gap {
						case "before-write":
							objsA.hooks = map[int]func(){1: other}
						case "before-mark":
							svcA.Store = &beforeFirstMark{Store: f.st, hook: other}
						}
						repA, errA := svcA.PublishPending(ctx, 100)
						if !ran {
							t.Fatal("the other pass never ran")
						}
						if errB != nil || repB.Published != 1 || repB.Failed != 0 {
							t.Fatalf("the other pass: %+v, %v; want it to publish the page", repB, errB)
						}
						if errA != nil || repA.Failed != 0 || repA.Published != 0 || repA.PublishedElsewhere != 1 {
							t.Fatalf("this pass: %+v, %v; want the page counted published elsewhere, no failure", repA, errA)
						}
						if gap == "before-write" && objsA.refused == 0 {
							t.Fatal("the store never refused this pass's write")
						}
						f.mustConverged(t, ev.ID, s.ID, "The change.")
					})
				}
			})
		})
	}
}

// The other publisher wrote a newer generation of the page and has not
// marked it yet when this one's write finds it, nor within the bound this
// one waits for its mark (here it marks only once this one is done):
// nobody has published the page, so this publication can neither count it
// published nor give up on it (the other may never mark). It publishes
// again, once, at a fresh generation; the other's mark then finds the page
// published with its summary, which is no failure of the other either.
func TestOvertakenByAnUnmarkedGenerationPublishesAgain(t *testing.T) {
	eachStorePair(t, func(t *testing.T, ctx context.Context, f *fixture, store, storeB objstore.Store, ev tidemark.Event, s publish.Summary) {
		arrived, proceed := make(chan struct{}), make(chan struct{})
		objsA := &pagePuts{Store: store, hooks: map[int]func(){1: func() { close(arrived); <-proceed }}}
		svcA := &publish.Service{Store: f.st, Objects: objsA, Sleep: noSleep}
		type outcome struct {
			res publish.Result
			err error
		}
		doneA := make(chan outcome, 1)
		go func() {
			res, err := svcA.Publish(ctx, s.ID)
			doneA <- outcome{res, err}
		}()
		<-arrived // A passed its pre-checks: its generation is the older
		var a outcome
		svcB := &publish.Service{Store: &beforeFirstMark{Store: f.st, hook: func() {
			// B's newer generation is written, not marked: A writes now.
			close(proceed)
			a = <-doneA
		}}, Objects: storeB}
		resB, errB := svcB.Publish(ctx, s.ID)
		if a.err != nil {
			t.Fatalf("the publication overtaken by an unmarked generation: %v", a.err)
		}
		if a.res.Elsewhere || a.res.Generation != resB.Generation || a.res.Generation <= 2 {
			t.Fatalf("A: %+v; want it published again by itself, at a generation after B's", a.res)
		}
		if errB != nil || !resB.Elsewhere {
			t.Fatalf("B: %+v, %v; want its page counted published elsewhere, no error", resB, errB)
		}
		mustPublished(t, f.mustSummary(t, s.ID), true)
		f.mustConverged(t, ev.ID, s.ID, "The change.")
	})
}

// A page nobody publishes is still reported: this publication is
// overtaken by a newer generation that is never marked (its publisher died
// after its write), waits the bound for its mark, publishes again, and is
// overtaken again the same way. It gives up after that one more attempt
// and fails, naming the page; the page is not marked published, and a
// sweep converges it.
func TestOvertakenTwiceByUnmarkedGenerationsFails(t *testing.T) {
	eachStorePair(t, func(t *testing.T, ctx context.Context, f *fixture, store, storeB objstore.Store, ev tidemark.Event, s publish.Summary) {
		dies := func() {
			dead := &publish.Service{Store: failMark{f.st}, Objects: storeB}
			if _, err := dead.Publish(ctx, s.ID); !errors.Is(err, errMarkInjected) {
				t.Errorf("the publisher that dies: %v", err)
			}
		}
		objsA := &pagePuts{Store: store, hooks: map[int]func(){1: dies, 2: dies, 3: dies}}
		var slept time.Duration
		svcA := &publish.Service{Store: f.st, Objects: objsA,
			Sleep: func(_ context.Context, d time.Duration) error { slept += d; return nil }}
		rep, err := svcA.PublishPending(ctx, 100)
		if err != nil || rep.Failed != 1 || rep.Published != 0 || rep.PublishedElsewhere != 0 {
			t.Fatalf("pass: %+v, %v; want the page failed", rep, err)
		}
		if objsA.n != 2 {
			t.Fatalf("%d page writes, want 2 (one more attempt, not a chase)", objsA.n)
		}
		if slept != 2*publish.DefaultMarkWait {
			t.Fatalf("waited %v for the dead writers' marks, want the bound twice (%v)", slept, 2*publish.DefaultMarkWait)
		}
		ps := f.pageOf(t, ev.ID)
		if msg := strings.Join(rep.Errors, "\n"); !strings.Contains(msg, ps.PageID) {
			t.Fatalf("the error does not name page %s: %s", ps.PageID, msg)
		}
		if ps.PublishedSummaryID != "" {
			t.Fatalf("the page is marked published with %s", ps.PublishedSummaryID)
		}
		mustPublished(t, f.mustSummary(t, s.ID), false)
		sw, err := f.svc.Sweep(ctx)
		if err != nil || sw.Republished != 1 || sw.Failed != 0 {
			t.Fatalf("sweep: %+v %v", sw, err)
		}
		f.mustConverged(t, ev.ID, s.ID, "The change.")
	})
}

// Losing to a newer summary is not finding the same summary published:
// the other pass accepts a newer summary and publishes it while this pass
// is between its pre-checks and its write, or between its write and its
// mark. This pass's attempt failed (DESIGN §1.2, step 4): it is counted
// failed, never published elsewhere, and the page shows the newer
// summary.
func TestPassLosingToANewerSummaryFails(t *testing.T) {
	for _, gap := range []string{"before-write", "before-mark"} {
		t.Run(gap, func(t *testing.T) {
			sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
				for name, newStore := range stores(t) {
					t.Run(name, func(t *testing.T) {
						ctx := context.Background()
						store := newStore(t)
						f := mustFixture(t, b, store)
						ev := f.mustEvent(t, "c1", "change", "evidence")
						f.mustAccept(t, ev, "Older summary.", "m1")
						objsA := &pagePuts{Store: store}
						svcA := &publish.Service{Store: f.st, Objects: objsA}
						svcB := &publish.Service{Store: f.st, Objects: store}
						var newer publish.Summary
						other := func() {
							newer = f.mustAccept(t, ev, "Newer summary.", "m2")
							if rep, err := svcB.PublishPending(ctx, 100); err != nil || rep.Published != 1 {
								t.Errorf("the other pass: %+v, %v", rep, err)
							}
						}
						switch gap {
						case "before-write":
							objsA.hooks = map[int]func(){1: other}
						case "before-mark":
							svcA.Store = &beforeFirstMark{Store: f.st, hook: other}
						}
						rep, err := svcA.PublishPending(ctx, 100)
						if err != nil || rep.Failed != 1 || rep.Published != 0 || rep.PublishedElsewhere != 0 {
							t.Fatalf("pass: %+v, %v; want its attempt failed", rep, err)
						}
						msg := strings.Join(rep.Errors, "\n")
						if !strings.Contains(msg, "newer") {
							t.Fatalf("the error does not say a newer summary or generation won: %s", msg)
						}
						f.mustConverged(t, ev.ID, newer.ID, "Newer summary.")
						f.mustPageShows(t, f.pageOf(t, ev.ID).PageID, "Newer summary.", "Older summary.")
					})
				}
			})
		})
	}
}

// A sweep republishing a page is overtaken by a pass that publishes the
// same summary on it: the sweep counts the page superseded (that
// publisher owns it), not republished by itself, and fails nothing.
func TestSweepOvertakenByAPassPublishingTheSameSummary(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		store := mem.New()
		f := mustFixture(t, b, store)
		ev := f.mustEvent(t, "c1", "change", "evidence")
		s := f.mustAccept(t, ev, "The change.", "m1")
		pass := &publish.Service{Store: f.st, Objects: store}
		objs := &pagePuts{Store: store, hooks: map[int]func(){1: func() {
			if rep, err := pass.PublishPending(ctx, 100); err != nil || rep.Published != 1 {
				t.Errorf("the pass: %+v, %v", rep, err)
			}
		}}}
		sweeper := &publish.Service{Store: f.st, Objects: objs}
		rep, err := sweeper.Sweep(ctx)
		if err != nil || rep.Superseded != 1 || rep.Republished != 0 || rep.Failed != 0 {
			t.Fatalf("sweep: %+v, %v; want the page superseded", rep, err)
		}
		f.mustConverged(t, ev.ID, s.ID, "The change.")
	})
}

// afterUnpublished runs hook once, just after the first Unpublished
// listing: a pass has taken its list of pending pages.
type afterUnpublished struct {
	publish.Store
	hook func()
	done bool
}

func (a *afterUnpublished) Unpublished(ctx context.Context, limit int) ([]string, error) {
	ids, err := a.Store.Unpublished(ctx, limit)
	if !a.done {
		a.done = true
		a.hook()
	}
	return ids, err
}

// The other pass publishes a page after this pass listed it pending and
// before this pass takes it up: the page is marked published with the
// summary this pass was to publish, so this pass counts it published
// elsewhere and does not write it again.
func TestPassLeavesAPagePublishedSinceItsListing(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		store := mem.New()
		f := mustFixture(t, b, store)
		ev := f.mustEvent(t, "c1", "change", "evidence")
		s := f.mustAccept(t, ev, "The change.", "m1")
		svcB := &publish.Service{Store: f.st, Objects: store}
		objsA := &pagePuts{Store: store}
		svcA := &publish.Service{Store: &afterUnpublished{Store: f.st, hook: func() {
			if rep, err := svcB.PublishPending(ctx, 100); err != nil || rep.Published != 1 {
				t.Errorf("the other pass: %+v, %v", rep, err)
			}
		}}, Objects: objsA}
		rep, err := svcA.PublishPending(ctx, 100)
		if err != nil || rep.Failed != 0 || rep.Published != 0 || rep.PublishedElsewhere != 1 {
			t.Fatalf("pass: %+v, %v; want the page counted published elsewhere", rep, err)
		}
		if objsA.n != 0 {
			t.Fatalf("the pass wrote the page %d times, want none", objsA.n)
		}
		f.mustConverged(t, ev.ID, s.ID, "The change.")
	})
}

// tornReads answers the first read-back of a page (a Get of changes/…) with
// the body of another write, as an S3 server whose reads are not atomic
// with its writes does (versitygw's posix backend, read while another
// process writes the object): the generation of one write, the body of
// another.
type tornReads struct {
	objstore.Store
	mu   sync.Mutex
	torn int
}

func (s *tornReads) Get(ctx context.Context, key string) (objstore.Object, error) {
	o, err := s.Store.Get(ctx, key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && strings.HasPrefix(key, "changes/") && s.torn == 0 {
		s.torn++
		o.Body = append([]byte("<!-- another write -->"), o.Body...)
	}
	return o, err
}

// busyPuts refuses the first page writes' conditions, as a store refuses
// them while other writers keep writing the page: the compare-and-swap
// runs out of attempts.
type busyPuts struct {
	objstore.Store
	mu      sync.Mutex
	refused int
}

func (s *busyPuts) Put(ctx context.Context, key string, body []byte, opt objstore.PutOptions) (objstore.Info, error) {
	s.mu.Lock()
	busy := strings.HasPrefix(key, "changes/") && s.refused < objstore.MaxCASAttempts+1
	if busy {
		s.refused++
	}
	s.mu.Unlock()
	if busy {
		return objstore.Info{}, fmt.Errorf("put %s: %w", key, objstore.ErrPrecondition)
	}
	return s.Store.Put(ctx, key, body, opt)
}

// A publication that cannot confirm its write because of what other
// writers did to the page (a read-back torn by another write, a
// compare-and-swap that other writers kept winning) is no corrupt write and
// no failure yet: the books decide it as for a newer generation, and with
// nothing published it publishes again, once.
func TestWriteContendedByOtherWritersPublishesAgain(t *testing.T) {
	for _, how := range []string{"torn-read-back", "compare-and-swap-exhausted"} {
		t.Run(how, func(t *testing.T) {
			sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
				ctx := context.Background()
				store := mem.New()
				f := mustFixture(t, b, store)
				ev := f.mustEvent(t, "c1", "change", "evidence")
				s := f.mustAccept(t, ev, "The change.", "m1")
				var objs objstore.Store = &tornReads{Store: store}
				if how == "compare-and-swap-exhausted" {
					objs = &busyPuts{Store: store}
				}
				svc := &publish.Service{Store: f.st, Objects: objs}
				rep, err := svc.PublishPending(ctx, 100)
				if err != nil || rep.Failed != 0 || rep.Published != 1 {
					t.Fatalf("pass: %+v, %v; want the page published on the second attempt", rep, err)
				}
				f.mustConverged(t, ev.ID, s.ID, "The change.")
			})
		})
	}
}

// noSleep is a Service's Sleep that returns at once: a wait for a mark
// passes its bound without sleeping.
func noSleep(context.Context, time.Duration) error { return nil }

// pageGets is one publisher's view of an object store: before each of its
// page reads (changes/…: its read-backs), counting from 1, it runs
// hooks[n] if there is one, so a test can hold a publisher between its
// write and its read-back.
type pageGets struct {
	objstore.Store
	mu    sync.Mutex
	n     int
	hooks map[int]func()
}

func (p *pageGets) Get(ctx context.Context, key string) (objstore.Object, error) {
	if strings.HasPrefix(key, "changes/") {
		p.mu.Lock()
		p.n++
		hook := p.hooks[p.n]
		p.mu.Unlock()
		if hook != nil {
			hook()
		}
	}
	return p.Store.Get(ctx, key)
}

// signal is a channel closed once, by whichever of its senders comes
// first.
type signal struct {
	once sync.Once
	c    chan struct{}
}

func newSignal() *signal { return &signal{c: make(chan struct{})} }

func (s *signal) fire() { s.once.Do(func() { close(s.c) }) }

func (s *signal) done() bool {
	select {
	case <-s.c:
		return true
	default:
		return false
	}
}

// pageStatePolls counts the reads of one page's state (the books a
// publication overtaken by a newer generation polls).
type pageStatePolls struct {
	publish.Store
	mu sync.Mutex
	n  int
}

func (p *pageStatePolls) PageState(ctx context.Context, pageID string) (publish.PageState, error) {
	p.mu.Lock()
	p.n++
	p.mu.Unlock()
	return p.Store.PageState(ctx, pageID)
}

// Two live publishers of one summary (two passes that took up the same
// pending page) overtake each other: A writes generation 1, B writes
// generation 2 before A's read-back, and B is between its write and its
// mark. Were A to publish again at once (generation 3), it would overtake
// B, which would publish again in turn (generation 4) and overtake A a
// second time: A would fail, although B then marks the page with the very
// summary A set out to publish. A gives B's generation a bounded time to be
// marked instead, polling the books, and writes nothing meanwhile:
//
//   - B marks it: A counts the page published elsewhere, at B's generation;
//   - a newer summary is accepted while A waits: A lost to it and fails
//     (DESIGN §1.2), and B's mark, lost too, repairs the page with it.
func TestOvertakenPublishersOfOneSummaryDoNotChaseEachOther(t *testing.T) {
	for _, meanwhile := range []string{"the-writer-marks", "a-newer-summary"} {
		t.Run(meanwhile, func(t *testing.T) {
			eachStorePair(t, func(t *testing.T, ctx context.Context, f *fixture, store, storeB objstore.Store, ev tidemark.Event, s publish.Summary) {
				var (
					bAtReadBack = make(chan struct{}) // B wrote its generation, after A's
					aMoved      = newSignal()         // A, overtaken, waits or writes again
					bWroteAgain = newSignal()         // B, overtaken in turn, wrote again
					aWroteAgain = newSignal()
					doneA       = make(chan struct{})
					doneB       = make(chan struct{})
					resB        publish.Result
					errB        error
					newer       publish.Summary
				)
				svcB := &publish.Service{Store: f.st, Objects: &pageGets{Store: storeB, hooks: map[int]func(){
					1: func() { close(bAtReadBack); <-aMoved.c },
					2: func() {
						bWroteAgain.fire()
						if aWroteAgain.done() {
							<-doneA // A reads its second write back, and the books, before B marks
						}
					},
				}}}
				putsA := &pagePuts{Store: store}
				objsA := &pageGets{Store: putsA, hooks: map[int]func(){
					1: func() { // A wrote generation 1; B starts now, so its generation is the newer
						go func() {
							defer close(doneB)
							resB, errB = svcB.Publish(ctx, s.ID)
						}()
						<-bAtReadBack
					},
					2: func() { // A wrote again: B overtakes it
						aWroteAgain.fire()
						aMoved.fire()
						<-bWroteAgain.c
					},
				}}
				var slept time.Duration
				booksA := &pageStatePolls{Store: f.st}
				svcA := &publish.Service{Store: booksA, Objects: objsA, Sleep: func(ctx context.Context, d time.Duration) error {
					slept += d
					if !aMoved.done() {
						if meanwhile == "a-newer-summary" {
							newer = f.mustAccept(t, ev, "Newer summary.", "m2")
						}
						aMoved.fire()
						<-doneB // B reads back and marks meanwhile
					}
					return nil
				}}
				resA, errA := svcA.Publish(ctx, s.ID)
				close(doneA)
				<-doneB
				if putsA.n != 1 {
					t.Errorf("A wrote the page %d times, want once (it waits for B's mark instead of chasing B)", putsA.n)
				}
				if slept == 0 || slept >= publish.DefaultMarkWait {
					t.Errorf("A waited %v for B's mark, want more than nothing and less than the bound %v", slept, publish.DefaultMarkWait)
				}
				switch meanwhile {
				case "the-writer-marks":
					if errA != nil || !resA.Elsewhere || resA.Generation != resB.Generation || resA.ETag != resB.ETag {
						t.Fatalf("A: %+v, %v; want the page counted published elsewhere, at B's generation", resA, errA)
					}
					if errB != nil || resB.Elsewhere || resB.Generation != 2 {
						t.Fatalf("B: %+v, %v; want it published by itself at generation 2", resB, errB)
					}
					f.mustConverged(t, ev.ID, s.ID, "The change.")
				case "a-newer-summary":
					if !errors.Is(errA, objstore.ErrNewerGeneration) || resA.Elsewhere {
						t.Fatalf("A: %+v, %v; want its attempt failed, overtaken by a newer summary's page", resA, errA)
					}
					if !errors.Is(errB, publish.ErrLostRace) || resB.Repaired == nil || resB.RepairErr != nil {
						t.Fatalf("B: %+v, %v; want its mark lost and the page repaired with the newer summary", resB, errB)
					}
					f.mustConverged(t, ev.ID, newer.ID, "Newer summary.")
				}
				if booksA.n < 2 {
					t.Errorf("A read the books %d times, want them polled", booksA.n)
				}
			})
		})
	}
}

// A writer that wrote a newer generation of the page and died before its
// mark gets the bound and no more: the publication it overtook polls the
// books for MarkWait (in the pauses it asks Sleep for), finds the
// generation still unmarked, presumes its writer dead, and only then
// publishes again, at a fresh generation: the page is published, by it.
func TestOvertakenByADeadWriterPublishesAgainAfterTheBound(t *testing.T) {
	eachStorePair(t, func(t *testing.T, ctx context.Context, f *fixture, store, storeB objstore.Store, ev tidemark.Event, s publish.Summary) {
		const bound = 3 * time.Second
		var slept, sleptAtRewrite time.Duration
		objsA := &pagePuts{Store: store}
		objsA.hooks = map[int]func(){
			1: func() { // a publisher writes generation 2 and dies before its mark
				dead := &publish.Service{Store: failMark{f.st}, Objects: storeB}
				if _, err := dead.Publish(ctx, s.ID); !errors.Is(err, errMarkInjected) {
					t.Errorf("the publisher that dies: %v", err)
				}
			},
			2: func() { sleptAtRewrite = slept },
		}
		books := &pageStatePolls{Store: f.st}
		svcA := &publish.Service{Store: books, Objects: objsA, MarkWait: bound,
			Sleep: func(_ context.Context, d time.Duration) error { slept += d; return nil }}
		res, err := svcA.Publish(ctx, s.ID)
		if err != nil || res.Elsewhere || res.Generation != 3 {
			t.Fatalf("A: %+v, %v; want the page published again by A, at generation 3", res, err)
		}
		if objsA.n != 2 {
			t.Fatalf("A wrote the page %d times, want twice", objsA.n)
		}
		if sleptAtRewrite != bound {
			t.Fatalf("A published again after waiting %v for the dead writer's mark, want the bound %v", sleptAtRewrite, bound)
		}
		if books.n < 3 {
			t.Fatalf("A read the books %d times while it waited, want them polled", books.n)
		}
		mustPublished(t, f.mustSummary(t, s.ID), true)
		f.mustConverged(t, ev.ID, s.ID, "The change.")
	})
}

// eachStorePair runs fn on every backend and every pair of stores
// (storePairs) with one event accepted with a summary: the set-up of the
// tests where two publishers of one summary meet at its page.
func eachStorePair(t *testing.T, fn func(t *testing.T, ctx context.Context, f *fixture, store, storeB objstore.Store, ev tidemark.Event, s publish.Summary)) {
	t.Helper()
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for name, newStores := range storePairs(t) {
			t.Run(name, func(t *testing.T) {
				store, storeB := newStores(t)
				f := mustFixture(t, b, store)
				ev := f.mustEvent(t, "c1", "change", "evidence")
				fn(t, context.Background(), f, store, storeB, ev, f.mustAccept(t, ev, "The change.", "m1"))
			})
		}
	})
}
