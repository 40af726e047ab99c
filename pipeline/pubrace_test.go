package pipeline

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/internal/gittest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/summarize"
)

// rendezvous holds the page writes (changes/…) of the first pages operations
// write until two operations (holder slots) have come to write the same
// page, or until release is closed; later pages pass. So two passes that
// took up the same pending pages write them at the same time, in whatever
// order the store then decides, whichever pass got there first.
type rendezvous struct {
	objstore.Store
	p       *Pipeline
	pages   int
	release chan struct{}

	mu      sync.Mutex
	waiting map[string]*meeting
	met     int // pages whose two writers met
}

type meeting struct {
	holders map[string]bool
	both    chan struct{}
}

func (r *rendezvous) Put(ctx context.Context, key string, body []byte, opt objstore.PutOptions) (objstore.Info, error) {
	if strings.HasPrefix(key, "changes/") {
		holder := r.p.holderOf(ctx)
		r.mu.Lock()
		m := r.waiting[key]
		if m == nil && len(r.waiting) < r.pages {
			m = &meeting{holders: map[string]bool{}, both: make(chan struct{})}
			r.waiting[key] = m
		}
		if m != nil && !m.holders[holder] {
			m.holders[holder] = true
			if len(m.holders) == 2 {
				r.met++
				close(m.both)
			}
		}
		r.mu.Unlock()
		if m != nil {
			select {
			case <-m.both:
			case <-r.release:
			}
		}
	}
	return r.Store.Put(ctx, key, body, opt)
}

// Two RunOnce at once in one process, over a git repository of a few
// hundred commits summarized and waiting to be published, take up the same
// pending pages and write the first of them at the same time. Each finds
// pages the other published with the summary it set out to publish: that
// is no work left undone, so both exit without error, and every page is
// published once, with its summary, the store holding the body the books
// record.
func TestTwoRunOnceAtOncePublishEveryPage(t *testing.T) {
	const commits = 300
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	h := gittest.NewHistory(t)
	repo := h.Write(h.Line(0, "change", commits))
	src, _, err := p.TrackRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunSource(ctx, src.Name, 1000, nil); err != nil {
		t.Fatal(err)
	}
	// Summarized, not published: both passes find every page pending.
	svc, err := p.BindStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := p.Summarizer("")
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := svc.Summarize(ctx, sum, 10*commits); err != nil || rep.Accepted != commits {
		t.Fatalf("summarize: %+v, %v; want %d accepted", rep, err, commits)
	}
	objs, err := p.Objects()
	if err != nil {
		t.Fatal(err)
	}
	rv := &rendezvous{Store: objs, p: p, pages: publish.DefaultConcurrency, release: make(chan struct{}),
		waiting: map[string]*meeting{}}
	p.objs = rv

	type pass struct {
		res OnceResult
		err error
	}
	var passes [2]pass
	var wg sync.WaitGroup
	var releaseOnce sync.Once
	for i := range passes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			passes[i].res, passes[i].err = p.RunOnce(ctx, OnceOptions{})
			// A pass that ended lets the other's writes through: it will
			// not come to write them.
			releaseOnce.Do(func() { close(rv.release) })
		}()
	}
	wg.Wait()
	if rv.met == 0 {
		t.Fatal("the two passes never wrote a page at the same time")
	}
	done := 0
	for i, ps := range passes {
		if ps.err != nil {
			t.Errorf("pass %d: %v", i, ps.err)
			continue
		}
		tot := ps.res.Publish
		if tot == nil {
			t.Errorf("pass %d published nothing", i)
			continue
		}
		if tot.PagesFailed != 0 {
			t.Errorf("pass %d: %d pages failed: %v", i, tot.PagesFailed, tot.Errors)
		}
		t.Logf("pass %d: %d published, %d published elsewhere", i, tot.Published, tot.PublishedElsewhere)
		done += tot.Published + tot.PublishedElsewhere
	}
	if done < commits {
		t.Errorf("the passes published %d pages between them (elsewhere included), want at least %d", done, commits)
	}

	// Every page is published once, with its current summary; the store
	// holds each at the generation and ETag the books record, and nothing
	// more; a sweep has nothing to do.
	st := p.DB().Publish()
	pages := 0
	if err := st.PageStates(ctx, func(ps publish.PageState) error {
		pages++
		if ps.PublishedSummaryID == "" || ps.PublishedSummaryID != ps.SummaryID {
			t.Errorf("page %s: published %q, current %q", ps.PageID, ps.PublishedSummaryID, ps.SummaryID)
			return nil
		}
		info, err := objs.Head(ctx, publish.PageKey(ps.PageID))
		if err != nil || info.Generation != ps.PublishedGeneration || info.ETag != ps.PublishedETag {
			t.Errorf("page %s: store %+v %v, books generation %d ETag %s", ps.PageID, info, err, ps.PublishedGeneration, ps.PublishedETag)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if pages != commits {
		t.Errorf("%d pages, want %d", pages, commits)
	}
	listed := 0
	if err := objs.List(ctx, "changes/", func(objstore.Info) error { listed++; return nil }); err != nil {
		t.Fatal(err)
	}
	if listed != commits {
		t.Errorf("the store holds %d change pages, want %d", listed, commits)
	}
	sums, err := st.Summaries(ctx, publish.SummaryFilter{Limit: 10 * commits})
	if err != nil || len(sums) != commits {
		t.Errorf("%d summaries, %v; want one per commit (%d)", len(sums), err, commits)
	}
	p.objs = objs
	if rep, err := p.Sweep(ctx); err != nil || rep.Republished != 0 || rep.Orphans != 0 || rep.Failed != 0 {
		t.Errorf("sweep after the two passes: %+v, %v", rep, err)
	}
}

// What a pass's publishing left undone is named: the pages not published,
// with the first failure (which names its page), told apart from the
// attempts that lost to a newer summary (their pages repaired with it);
// pages another publisher published with the same summary leave nothing.
func TestPagesUndoneNamesWhatWasLeft(t *testing.T) {
	tot := publish.Totals{PagesFailed: 3, PagesRepaired: 1, PublishedElsewhere: 5,
		FirstPageError: "publish S1: write changes/P1.html: boom"}
	got := strings.Join(tot.Undone(), "; ")
	for _, want := range []string{"2 pages not published", "changes/P1.html: boom", "1 publication lost to a newer summary"} {
		if !strings.Contains(got, want) {
			t.Errorf("undone %q does not say %q", got, want)
		}
	}
	if got := (publish.Totals{PublishedElsewhere: 5, Published: 3}).Undone(); len(got) != 0 {
		t.Errorf("pages published elsewhere left %q undone", got)
	}
	if got := strings.Join((publish.Totals{PagesFailed: 1, FirstPageError: "x"}).Undone(), "; "); !strings.Contains(got, "1 page not published") {
		t.Errorf("one page: %q", got)
	}
}

// heldSummarizer summarizes every event alike, and holds its first answer
// until release is closed, telling arrived when it is asked.
type heldSummarizer struct {
	arrived, release chan struct{}
	mu               sync.Mutex
	calls            int
}

func (s *heldSummarizer) Identity() (string, string) { return "held", "v1" }

func (s *heldSummarizer) Summarize(ctx context.Context, in summarize.Input) (summarize.Draft, error) {
	s.mu.Lock()
	s.calls++
	first := s.calls == 1
	s.mu.Unlock()
	if first {
		close(s.arrived)
		<-s.release
	}
	return summarize.Draft{Text: "A change.", Model: "held", PromptVersion: "v1"}, nil
}

// Two publishing operations of one process (two RunOnce) summarize under
// holder slots of their own, as they claim runs: while one asks the
// summarizer about an event, the other passes it over instead of taking
// the first one's claim for its own and asking again.
func TestTwoPublishingOperationsClaimSummariesApart(t *testing.T) {
	ctx := context.Background()
	p := open(t, t.TempDir(), nil)
	src, _, err := p.TrackRepo(ctx, gittest.Repo(t, "one change"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunSource(ctx, src.Name, 10, nil); err != nil {
		t.Fatal(err)
	}
	ctx1, h1, release1, err := p.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release1()
	ctx2, h2, release2, err := p.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	svc1, err := p.BindStore(ctx1)
	if err != nil {
		t.Fatal(err)
	}
	svc2, err := p.BindStore(ctx2)
	if err != nil {
		t.Fatal(err)
	}
	if svc1.Holder != h1 || svc2.Holder != h2 {
		t.Errorf("publishers' holders %q and %q, want their operations' %q and %q", svc1.Holder, svc2.Holder, h1, h2)
	}
	sum := &heldSummarizer{arrived: make(chan struct{}), release: make(chan struct{})}
	first := make(chan error, 1)
	go func() {
		_, err := svc1.Summarize(ctx1, sum, 10)
		first <- err
	}()
	<-sum.arrived // the first operation is asking about the event
	rep, err := svc2.Summarize(ctx2, sum, 10)
	close(sum.release)
	if err := <-first; err != nil {
		t.Fatalf("the first operation: %v", err)
	}
	if err != nil || rep.ClaimedElsewhere != 1 || rep.Accepted+rep.Unchanged != 0 {
		t.Fatalf("the second operation: %+v, %v; want the event passed over", rep, err)
	}
	if sum.calls != 1 {
		t.Fatalf("the summarizer was asked %d times about one event", sum.calls)
	}
}
