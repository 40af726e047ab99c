package publish

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/failpoint"
	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/internal/groupcommit"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/summarize"
	"golang.org/x/sync/errgroup"
)

// Failpoints of a publication, in the order a publication reaches them.
var (
	fpAfterPrecheck = failpoint.Register("publish.after-precheck",
		"the pre-checks passed and a generation is allocated | the source card upsert")
	fpAfterCard = failpoint.Register("publish.after-card",
		"the source card is written | the page body write")
	fpAfterObjectWrite = failpoint.Register("publish.after-object-write",
		"the page body is written to the object store | the read-back and the mark")
	fpAfterReadBack = failpoint.Register("publish.after-read-back",
		"the read-back matched | the conditional mark")
	fpBeforeRepair = failpoint.Register("publish.before-repair",
		"the mark lost the race | the repair republishes the current summary")
)

// PageOverrides lets page documents (edited elsewhere) override what a
// change page shows. A page document is keyed by the ID of the event its
// page shows. Nil means no overrides.
type PageOverrides interface {
	PageOverride(ctx context.Context, eventID string) (Override, bool, error)
}

// Override replaces a page's title and adds notes.
type Override struct {
	Title string
	Notes string
}

// Service publishes summaries.
type Service struct {
	// Store's Mark commits whatever other pipelines write with a mark (the
	// outbox drafts its intents there) in its own transaction: the SQL
	// store is given those writes (sqlstore.(*PublishStore).WithHooks).
	Store     Store
	Objects   objstore.Store
	Overrides PageOverrides
	// BaseURL, if set, is where the wiki is served ("https://wiki.example/");
	// publications carry BaseURL + key as their page URL.
	BaseURL string
	// StoreLocation is Objects' location in canonical form (an absolute
	// directory, s3://bucket/prefix), recorded with the store's identity
	// at the first publication and compared at every start.
	StoreLocation string
	Logger        *slog.Logger
	// Holder names this worker in its claims on summarizing an event
	// (Store.ClaimSummary), which keep concurrent publishers from asking
	// the summarizer about the same event; "" makes one for the service.
	Holder string
	// Concurrency bounds the publications PublishPending runs at once
	// (0: DefaultConcurrency). Each is fenced on its own page as a single
	// publication is: a generation from SQL, the store's compare-and-swap,
	// the read-back and the conditional mark; they share no page.
	Concurrency int
	// MarkWait bounds how long a publication overtaken by a newer
	// generation of its page that nobody has marked yet gives that
	// generation's writer to mark it (step 5, see publish), polling the
	// books, before it presumes the writer dead and publishes again
	// (0 or less: DefaultMarkWait).
	MarkWait time.Duration
	// Sleep waits for d or until ctx ends, between those polls (nil: a
	// timer). The wait is measured in what it asks Sleep for, so a test
	// that injects one decides when the writer marks and never sleeps.
	Sleep func(ctx context.Context, d time.Duration) error

	holderOnce sync.Once
	madeHolder string

	bindMu sync.Mutex
	bound  *StoreIdentity // set once BindStore verified the store

	cardMu    sync.Mutex
	cardLocks map[string]*sync.Mutex // by source: one card write at a time

	// marks commits the marks of publications that finish together, when
	// the store can (BatchMarker).
	marks groupcommit.Group[markReq, tidemark.Publication]
}

// DefaultConcurrency is how many publications PublishPending runs at once
// by default: object stores answer one write in tens of milliseconds, and
// take many at once (a local directory gains little, but loses nothing).
const DefaultConcurrency = 8

// DefaultMarkWait is how long, by default, a publication overtaken by a
// newer generation of its page that nobody has marked yet waits for it to
// be marked: many times what a publication takes from its write to its
// mark (a write, a read-back and a mark, tens of milliseconds each).
const DefaultMarkWait = 5 * time.Second

func (s *Service) concurrency() int {
	if s.Concurrency <= 0 {
		return DefaultConcurrency
	}
	return s.Concurrency
}

// cardLock returns the lock that serializes the card writes of a source,
// so publications of one new source running together write its card once.
func (s *Service) cardLock(sourceID string) *sync.Mutex {
	s.cardMu.Lock()
	defer s.cardMu.Unlock()
	if s.cardLocks == nil {
		s.cardLocks = map[string]*sync.Mutex{}
	}
	l, ok := s.cardLocks[sourceID]
	if !ok {
		l = &sync.Mutex{}
		s.cardLocks[sourceID] = l
	}
	return l
}

func (s *Service) log() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// Result is what one publication did.
type Result struct {
	SummaryID  string `json:"summary_id"`
	PageID     string `json:"page_id"`
	Key        string `json:"key"`
	Generation int64  `json:"generation"`
	ETag       string `json:"etag"`
	// Repaired is set when this attempt lost the race and republished the
	// current summary onto its page.
	Repaired *Result `json:"repaired,omitempty"`
	// RepairErr is why the repair failed, if it did.
	RepairErr error `json:"-"`
	// Elsewhere is set when another publisher published this summary on
	// the page, at a newer generation, while this attempt was under way:
	// the page shows what this attempt set out to publish, which is no
	// failure. Generation and ETag are then that publication's.
	Elsewhere bool `json:"elsewhere,omitempty"`
}

// PageKey is the object key of a page.
func PageKey(pageID string) string { return "changes/" + pageID + ".html" }

// CardKey is the object key of a source's card.
func CardKey(sourceID string) string { return "sources/" + sourceID + ".html" }

// IndexKey is the wiki's index.
const IndexKey = "index.html"

const contentType = "text/html; charset=utf-8"

// finishTimeout bounds what a publication does after its body is written
// (the read-back and the mark), which runs even when its context is
// cancelled.
const finishTimeout = 30 * time.Second

// Publish publishes a summary on its event's page. When the final mark
// loses to a newer summary it repairs the page (one level) and returns an
// error matching ErrLostRace, whatever the repair's outcome. When another
// publisher of the same summary overtakes it (a newer generation of the
// page), it gives that one up to MarkWait to mark its generation, and
// succeeds if it has published the summary (Result.Elsewhere); if it has
// not by then, it publishes again, once.
func (s *Service) Publish(ctx context.Context, summaryID string) (Result, error) {
	return s.publish(ctx, summaryID, true, false, nil)
}

// knownCards remembers, for one publishing pass, the sources whose card
// the store holds (seen or written in the pass), so the pass asks the
// store once per source rather than once per page. nil remembers nothing.
type knownCards struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (k *knownCards) has(sourceID string) bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen[sourceID]
}

func (k *knownCards) add(sourceID string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil {
		k.seen = map[string]bool{}
	}
	k.seen[sourceID] = true
}

// publish is one publication of summaryID (attempt: steps 1 to 4, and
// the repair if repair is set), then step 5: an attempt overtaken by a
// newer generation of its page (another publisher wrote or marked one
// after this attempt's pre-checks), or kept by other writers from
// confirming its write (see overtaken), is decided by the books. While
// the store holds a newer generation than this attempt's that the books
// do not mark published, its writer is between its write and its mark (or
// died there): the books are polled for up to MarkWait (see awaitMark)
// for that writer to mark it, and this attempt writes nothing meanwhile.
// Publishing again at once would overtake a live writer, which would
// publish again in turn and overtake this one: two publishers of one
// summary would chase each other. The newest generation's writer is never
// overtaken by one that waits, so the wait ends, by a mark or the bound.
// Then:
//
//   - If the books mark the page published with this very summary at a
//     newer generation, the summary is published, by another publisher:
//     that is no failure, and the result says so (Result.Elsewhere).
//   - If the event points at another summary now, or at none, this attempt
//     lost to it and fails as it did: the newer summary's publisher owns
//     the page.
//   - Otherwise the newer generation is still not marked: its writer is
//     presumed dead after its write (or there is none: the store holds
//     nothing newer than this attempt's generation). A publication
//     (repair set) publishes again, at a fresh generation, once; a second
//     attempt overtaken the same way (and waited for the same way) fails,
//     naming the page (nobody has published it; a pass or sweep will). A
//     repair does not: it would chase the publisher it lost to.
func (s *Service) publish(ctx context.Context, summaryID string, repair, pending bool, cards *knownCards) (Result, error) {
	res, err := s.attempt(ctx, summaryID, repair, pending, cards)
	for again := false; overtaken(err) && ctx.Err() == nil; again = true {
		ps, perr := s.awaitMark(ctx, summaryID, res)
		switch {
		case perr != nil:
			return res, errors.Join(err, fmt.Errorf("page %s overtaken: %w", res.PageID, perr))
		case ps.PublishedSummaryID == summaryID && ps.PublishedGeneration > res.Generation:
			s.log().Info("publish: another publisher published the summary first", "summary", summaryID,
				"page", res.PageID, "generation", ps.PublishedGeneration)
			return Result{SummaryID: summaryID, PageID: res.PageID, Key: res.Key, Generation: ps.PublishedGeneration,
				ETag: ps.PublishedETag, Elsewhere: true}, nil
		case ps.SummaryID != summaryID || !ps.PointerFresh:
			return res, err // lost to a newer summary (or a rejection)
		case !repair:
			return res, err
		case again:
			return res, fmt.Errorf("publish %s: page %s was overtaken twice by generations other publishers did not mark published "+
				"within %v (they died after their write, or are still writing it): %w", summaryID, res.PageID, s.markWait(), err)
		}
		s.log().Info("publish: a newer generation of the page is not marked published; publishing again",
			"summary", summaryID, "page", res.PageID, "generation", res.Generation)
		res, err = s.attempt(ctx, summaryID, repair, pending, cards)
	}
	return res, err
}

// markPoll is the first pause between two reads of the books while a
// publication waits for a newer generation to be marked; each pause
// doubles, up to maxMarkPoll.
const (
	markPoll    = 10 * time.Millisecond
	maxMarkPoll = 250 * time.Millisecond
)

func (s *Service) markWait() time.Duration {
	if s.MarkWait <= 0 {
		return DefaultMarkWait
	}
	return s.MarkWait
}

func (s *Service) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	return clock.Sleep(ctx, d)
}

// awaitMark is what the books say of the page of res, an attempt of
// summaryID that was overtaken, once they decide it: a newer generation
// than res's is marked published, or the event no longer points at
// summaryID with its current evidence. Until then, while the store holds
// a newer generation of the page than res's (its writer is between its
// write and its mark), it reads them again after a pause, for up to
// s.markWait() in all; when the store holds none (nobody else wrote: a
// torn read-back, a compare-and-swap that others kept winning and then
// left) there is nobody to wait for. It returns the last state read.
func (s *Service) awaitMark(ctx context.Context, summaryID string, res Result) (PageState, error) {
	decided := func(ps PageState) bool {
		return ps.PublishedGeneration > res.Generation || ps.SummaryID != summaryID || !ps.PointerFresh
	}
	ps, err := s.Store.PageState(ctx, res.PageID)
	if err != nil || decided(ps) {
		return ps, err
	}
	// A store that cannot say is waited for: the bound ends the wait.
	if info, herr := s.Objects.Head(ctx, res.Key); errors.Is(herr, objstore.ErrNotFound) ||
		herr == nil && info.Generation <= res.Generation {
		return ps, nil
	}
	bound := s.markWait()
	pause := markPoll
	for waited := time.Duration(0); waited < bound; {
		pause = min(pause, bound-waited)
		if err := s.sleep(ctx, pause); err != nil {
			return ps, err
		}
		waited += pause
		pause = min(2*pause, maxMarkPoll)
		if ps, err = s.Store.PageState(ctx, res.PageID); err != nil || decided(ps) {
			return ps, err
		}
	}
	return ps, nil
}

// overtaken reports whether a publication failed because other writers
// were at its page (not because a newer summary won the mark): a newer
// generation was written or marked; its compare-and-swap lost every
// attempt (objstore.ErrPrecondition: others kept writing); or its
// read-back differed (ErrReadBack: a store whose reads are not atomic
// with another's write, as versitygw's posix backend, answers the body of
// one write with the generation of another). A read-back that differs
// for want of any other writer fails the attempt made again too.
func overtaken(err error) bool {
	return err != nil && !errors.Is(err, ErrLostRace) &&
		(errors.Is(err, objstore.ErrNewerGeneration) || errors.Is(err, ErrNewerPublished) ||
			errors.Is(err, objstore.ErrPrecondition) || errors.Is(err, ErrReadBack))
}

// attempt is one publication of summaryID: the pre-checks, the write, the
// read-back and the mark (steps 1 to 3), and the repair of a lost mark
// (step 4) if repair is set. A pending publication (pending set: the
// summary was listed unpublished) whose page is marked published with
// the summary by the pre-checks was published by another publisher since
// it was listed: it writes nothing (Result.Elsewhere).
func (s *Service) attempt(ctx context.Context, summaryID string, repair, pending bool, cards *knownCards) (Result, error) {
	res := Result{SummaryID: summaryID}
	// 1. Pre-checks, before anything is written.
	plan, err := s.Store.Prepare(ctx, summaryID)
	if err != nil {
		return res, err
	}
	res.PageID, res.Key, res.Generation = plan.PageID, PageKey(plan.PageID), plan.Generation
	if pending && plan.Published.SummaryID == summaryID {
		return Result{SummaryID: summaryID, PageID: plan.PageID, Key: res.Key, Generation: plan.Published.Generation,
			ETag: plan.Published.ETag, Elsewhere: true}, nil
	}
	// The store is the wiki's store (bound at the first publication;
	// checked once per pass, see checkAfresh, and again by the mark, which
	// refuses a store the wiki was rebound from), so a refused publication writes
	// nothing.
	bound, err := s.BindStore(ctx)
	if err != nil {
		return res, err
	}
	if err := fpAfterPrecheck.Hit(ctx); err != nil {
		return res, err
	}
	// 2. Source card (so the page never links to a missing card), body,
	// read-back.
	if err := s.ensureCard(ctx, plan.Source, cards); err != nil {
		return res, err
	}
	if err := fpAfterCard.Hit(ctx); err != nil {
		return res, err
	}
	body, err := s.renderPage(ctx, &plan)
	if err != nil {
		return res, err
	}
	info, err := objstore.PutGeneration(ctx, s.Objects, res.Key, body, plan.Generation, contentType)
	if err != nil {
		// ErrNewerGeneration: a newer publication owns the page.
		return res, fmt.Errorf("publish %s: write %s: %w", summaryID, res.Key, err)
	}
	// From here on the publication is finished whatever happens to ctx (a
	// worker told to stop): the body is in the store, and the books must
	// say so, or the store stays ahead of them until a sweep.
	finishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := fpAfterObjectWrite.Hit(finishCtx); err != nil {
		return res, err
	}
	got, err := s.Objects.Get(finishCtx, res.Key)
	if err != nil {
		return res, fmt.Errorf("publish %s: read back %s: %w", summaryID, res.Key, err)
	}
	if got.Generation > plan.Generation {
		return res, fmt.Errorf("publish %s: read back %s: generation %d replaced ours (%d): %w",
			summaryID, res.Key, got.Generation, plan.Generation, objstore.ErrNewerGeneration)
	}
	// The ETag read back must be the one the write answered: the version
	// the sweeper will compare the store's listing against.
	if !bytes.Equal(got.Body, body) || got.ETag != info.ETag || got.Generation != plan.Generation {
		return res, fmt.Errorf("publish %s: %s generation %d: %w", summaryID, res.Key, plan.Generation, ErrReadBack)
	}
	res.ETag = info.ETag
	if err := fpAfterReadBack.Hit(finishCtx); err != nil {
		return res, err
	}
	// 3. The conditional mark.
	if s.BaseURL != "" {
		plan.PageURL = strings.TrimRight(s.BaseURL, "/") + "/" + res.Key
	}
	_, err = s.mark(finishCtx, plan, Written{ETag: info.ETag, Format: PageFormat(), Store: bound})
	if err == nil {
		return res, nil
	}
	if !errors.Is(err, ErrLostRace) || !repair {
		return res, err
	}
	// 4. Lost: repair the page with the current summary, one level only,
	// and still report this attempt as failed.
	s.log().Warn("publish: lost the race; repairing the page", "summary", summaryID, "page", plan.PageID)
	if ferr := fpBeforeRepair.Hit(ctx); ferr != nil {
		return res, errors.Join(err, fmt.Errorf("repair of page %s: %w", plan.PageID, ferr))
	}
	current, cerr := s.Store.CurrentSummary(ctx, plan.Event.ID)
	switch {
	case cerr != nil:
		return res, errors.Join(err, fmt.Errorf("repair of page %s: %w", plan.PageID, cerr))
	case current == "":
		// Nothing current to publish (the summary was rejected while its
		// page was being written): the page this attempt wrote shows a
		// summary that must never be published, so it is withdrawn now,
		// not left on the wiki until a sweep.
		if werr := s.withdrawLost(finishCtx, plan.PageID, bound); werr != nil {
			return res, errors.Join(err, fmt.Errorf("withdraw page %s: %w", plan.PageID, werr))
		}
		return res, err
	}
	rep, rerr := s.publish(ctx, current, false, false, cards)
	res.Repaired, res.RepairErr = &rep, rerr
	if rerr != nil {
		return res, errors.Join(err, fmt.Errorf("repair of page %s with summary %s: %w", plan.PageID, current, rerr))
	}
	return res, err
}

// mark writes a publication's mark: in a group commit with the marks of
// the publications that finished at the same time when the store can
// batch, on its own otherwise. Either way it returns once its own mark
// has committed or failed.
func (s *Service) mark(ctx context.Context, p Plan, w Written) (tidemark.Publication, error) {
	bm, ok := s.Store.(BatchMarker)
	if !ok || bm.MaxMarks() <= 1 {
		return s.Store.Mark(ctx, p, w)
	}
	return s.marks.Do(ctx, markReq{p, w}, bm.MaxMarks(), func(ctx context.Context, reqs []markReq) ([]tidemark.Publication, []error) {
		ps, ws := make([]Plan, len(reqs)), make([]Written, len(reqs))
		for i, r := range reqs {
			ps[i], ws[i] = r.p, r.w
		}
		return bm.MarkMany(ctx, ps, ws)
	})
}

type markReq struct {
	p Plan
	w Written
}

// ensureCard writes the source's card if it has never been written, so a
// page never links to a missing card. Its listing is refreshed by
// RefreshListings.
//
// Within a pass (cards), a card seen or written once is not asked for
// again: the pass's listing refresh rewrites the cards of the sources it
// published, and the sweeper restores what goes missing later.
func (s *Service) ensureCard(ctx context.Context, src SourceInfo, cards *knownCards) error {
	if cards.has(src.ID) {
		return nil
	}
	l := s.cardLock(src.ID)
	l.Lock()
	defer l.Unlock()
	key := CardKey(src.ID)
	if _, err := s.Objects.Head(ctx, key); err == nil {
		cards.add(src.ID)
		return nil
	} else if !errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("card %s: %w", key, err)
	}
	if _, err := s.writeCard(ctx, src); err != nil {
		return err
	}
	cards.add(src.ID)
	return nil
}

// SummarizeReport counts what Summarize did.
type SummarizeReport struct {
	Considered int `json:"considered"`
	Accepted   int `json:"accepted"`
	Unchanged  int `json:"unchanged"`
	// Reinstated summaries were made by this round's model and prompt
	// before another superseded them: switching back makes them current
	// again without asking the summarizer (Store.Reinstate).
	Reinstated int `json:"reinstated"`
	// ClaimedElsewhere counts the events another worker was asking the
	// summarizer about (Store.ClaimSummary): passed over, not failed.
	ClaimedElsewhere int `json:"claimed_elsewhere"`
	// Elsewhere are those events (the first 20): whose claim each is,
	// and until when it holds.
	Elsewhere []Elsewhere `json:"elsewhere,omitempty"`
	Failed    int         `json:"failed"`
	Errors    []string    `json:"errors,omitempty"`
	// Held are the events this round held: the summarizer refused them
	// HoldAfter rounds in a row or more while it summarized later events.
	Held []Held `json:"held,omitempty"`
	// Holding are the events earlier rounds held, which this round left
	// out (Store.HeldSummaries, the first MaxHolding): not summarized
	// until their holds end.
	Holding []Held `json:"holding,omitempty"`
}

// MaxHolding bounds the held events a report names.
const MaxHolding = 100

// Elsewhere is an event a round passed over because another worker was
// asking the summarizer about it: Holder's claim on it holds until Until
// (a claim of a worker of this host that is gone is taken over, never
// passed over). It is summarized by Holder, or by a later round if Holder
// gives up.
type Elsewhere struct {
	EventID string    `json:"event_id"`
	Title   string    `json:"title"`
	Holder  string    `json:"holder"`
	Until   time.Time `json:"until"`
}

// maxElsewhere bounds the events a report names as claimed elsewhere.
const maxElsewhere = 20

// Held is an event a round passes over until Until, because the
// summarizer refused it Failures rounds in a row (the last time with Err)
// while it summarized later events.
type Held struct {
	EventID  string    `json:"event_id"`
	Title    string    `json:"title"`
	Failures int       `json:"failures"`
	Until    time.Time `json:"until"`
	Err      string    `json:"error"`
}

// The rule for an event the summarizer keeps refusing (a 5xx for that
// input, an answer that cannot be read, a local model server that crashes
// on it). An unavailable answer stops a round, as an outage would: the
// next round starts with the same event. Once an event has failed
// HoldAfter rounds in a row it is passed over instead, and if a later
// event of the same round is summarized (so the endpoint answers, and
// this event is the trouble) it is held: left out of the rounds for
// HoldMin, doubling with each further failure up to HoldMax, then tried
// again. A round passes over at most MaxPassedOver events: during an
// outage, when every event fails, a round asks about MaxPassedOver+1
// events at most and holds none.
const (
	HoldAfter     = 3
	HoldMin       = time.Hour
	HoldMax       = 24 * time.Hour
	MaxPassedOver = 3
)

// SummaryClaimTTL is how long a worker's claim on asking the summarizer
// about an event lasts (Store.ClaimSummary): longer than one request may
// take (the openai summarizer gives up after 3 minutes), so that while it
// waits for an answer no other worker asks about the same event.
const SummaryClaimTTL = 5 * time.Minute

// maxFailureBytes bounds the failure recorded with an event's count.
const maxFailureBytes = 1 << 10

// holdFor is how long an event that failed failures rounds in a row is held.
func holdFor(failures int) time.Duration {
	d := HoldMin
	for i := HoldAfter; i < failures && d < HoldMax; i++ {
		d *= 2
	}
	return min(d, HoldMax)
}

// Summarize summarizes up to limit events that have no summary of their
// current evidence under sum's model and prompt version, and accepts the
// drafts. A failing event is counted and passed over; an unavailable
// summarizer ends the round with an error matching tidemark.ErrUnavailable
// that names the event, and the report of what was done before it. An
// event the summarizer keeps refusing while it answers for others is held
// (see HoldAfter) and reported in Held.
func (s *Service) Summarize(ctx context.Context, sum summarize.Summarizer, limit int) (SummarizeReport, error) {
	var rep SummarizeReport
	model, prompt := sum.Identity()
	evs, err := s.Store.Unsummarized(ctx, model, prompt, limit)
	if err != nil {
		return rep, err
	}
	// The events Unsummarized leaves out as held are not summarized
	// either: the report names them, so a pass never looks complete
	// while they wait.
	if rep.Holding, err = s.Store.HeldSummaries(ctx, model, prompt, MaxHolding); err != nil {
		return rep, err
	}
	// passed are the events of this round refused HoldAfter rounds in a
	// row or more and passed over, held once a later event is summarized.
	var passed []refusedEvent
	var firstRefusal error // the summarizer's first ordinary failure
	hold := func() error {
		for _, p := range passed {
			until, err := s.Store.HoldSummary(ctx, p.f, holdFor(p.failures))
			if err != nil {
				return fmt.Errorf("hold event %s: %w", p.ev.ID, err)
			}
			h := Held{EventID: p.ev.ID, Title: p.ev.Title, Failures: p.failures, Until: until, Err: p.f.Err}
			rep.Held = append(rep.Held, h)
			rep.Errors = append(rep.Errors, fmt.Sprintf("event %s (%q): held until %s: the summarizer refused it %d rounds in a row while it summarized later events: %s",
				h.EventID, h.Title, fieldtext.Day(h.Until), h.Failures, h.Err))
			s.log().Warn("summarize: event held", "event", h.EventID, "title", h.Title, "failures", h.Failures, "until", h.Until, "err", h.Err)
		}
		passed = nil
		return nil
	}
	for _, ev := range evs {
		rep.Considered++
		in, hash, err := s.summarizeInput(ctx, ev)
		if err == nil && hash != ev.EvidenceHash {
			err = fmt.Errorf("event %s re-frozen while summarizing: %w", ev.ID, ErrEvidenceMismatch)
		}
		var d summarize.Draft
		refusedBySummarizer, reinstated := false, false
		if err == nil {
			// A summary this model and prompt made of this evidence, which
			// another superseded, is made current again: its identity is
			// taken, and the summarizer is not asked twice.
			_, made, rerr := s.Store.Reinstate(ctx, ev.ID, hash, model, prompt)
			switch {
			case rerr == nil && !made:
				// Current already: another worker summarized the event
				// since the listing. Nothing was made current again.
				rep.Unchanged++
				continue
			case rerr == nil:
				reinstated = true
			case errors.Is(rerr, ErrRejected):
				// Rejected since the listing: the rejection stands.
				rep.Unchanged++
				continue
			case !errors.Is(rerr, tidemark.ErrNotFound):
				err = rerr
			}
		}
		claim := SummaryClaim{EventID: ev.ID, Model: model, PromptVersion: prompt, Holder: s.holder()}
		claimed := false
		if err == nil && !reinstated {
			// Another worker asking about this event now is not paid
			// for twice: pass it over, and say whose claim it is. A
			// claim of a worker of this host that is gone was taken
			// over.
			var got SummaryClaimed
			got, err = s.Store.ClaimSummary(ctx, claim, SummaryClaimTTL)
			claimed = err == nil && got.OK
			if got.TookOver != "" {
				s.log().Info("summarize: took over the claim of a gone worker", "event", ev.ID, "holder", got.TookOver)
			}
			if err == nil && !claimed {
				rep.ClaimedElsewhere++
				if len(rep.Elsewhere) < maxElsewhere {
					rep.Elsewhere = append(rep.Elsewhere, Elsewhere{EventID: ev.ID, Title: ev.Title, Holder: got.Holder, Until: got.Until})
				}
				continue
			}
		}
		if err == nil && !reinstated {
			d, err = sum.Summarize(ctx, in)
			refusedBySummarizer = err != nil
		}
		var created bool
		if err == nil && !reinstated {
			_, created, err = s.Store.Accept(ctx, NewSummary{EventID: ev.ID, EvidenceHash: hash, Draft: d})
			if errors.Is(err, ErrIdentityConflict) && s.lostRace(ctx, ev, hash, model, prompt) {
				// Another worker's summary of the same identity came first
				// (its claim expired while this one waited for the model):
				// it stands, and this round lost a race, which is no
				// failure.
				s.log().Info("summarize: another worker summarized the event first", "event", ev.ID, "model", model)
				err = nil
			}
		}
		if claimed {
			if rerr := s.Store.ReleaseSummary(context.WithoutCancel(ctx), claim); rerr != nil {
				s.log().Warn("summarize: release the claim", "event", ev.ID, "err", rerr)
			}
		}
		switch {
		case ctx.Err() != nil:
			return rep, ctx.Err()
		case refusedBySummarizer && errors.Is(err, tidemark.ErrInvalid):
			// The endpoint refused the summarizer's configuration (a key,
			// a model): it would refuse every event alike. Stop at once.
			rep.Failed++
			rep.Errors = append(rep.Errors, fmt.Sprintf("event %s: %v", ev.ID, err))
			told(ctx, StepFailed)
			return rep, fmt.Errorf("summarizing stopped at event %s: the summarizer's configuration was refused: %w", ev.ID, err)
		case errors.Is(err, tidemark.ErrUnavailable):
			rep.Failed++
			rep.Errors = append(rep.Errors, fmt.Sprintf("event %s: %v", ev.ID, err))
			told(ctx, StepFailed)
			failures := 0
			if refusedBySummarizer {
				// The endpoint's answer may be long (an HTML page): the
				// record keeps its start.
				f := SummaryFailure{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Model: model, PromptVersion: prompt,
					Err: summarize.Cut(tidemark.Text(err), maxFailureBytes)}
				n, ferr := s.Store.SummaryFailed(ctx, f)
				if ferr != nil {
					return rep, errors.Join(err, fmt.Errorf("record the failure of event %s: %w", ev.ID, ferr))
				}
				failures = n
				if n >= HoldAfter && len(passed) < MaxPassedOver {
					// Refused often enough to be passed over: a later
					// event tells whether it is the trouble.
					passed = append(passed, refusedEvent{ev, f, n})
					continue
				}
			}
			// The summarizer (or the database) cannot be reached, as far
			// as this round can tell: every other event would fail the
			// same way. Stop; what was accepted stays accepted, the rest
			// waits for the next round.
			why := ""
			if failures > 1 {
				why = fmt.Sprintf(" (refused %d rounds in a row; after %d it is passed over once a later event is summarized)", failures, HoldAfter)
			}
			return rep, fmt.Errorf("summarizing stopped at event %s (%q), %d of %d events%s%s: %w",
				ev.ID, ev.Title, rep.Considered, len(evs), why, passedNote(passed), err)
		case err != nil:
			rep.Failed++
			if refusedBySummarizer && firstRefusal == nil {
				firstRefusal = err
			}
			if len(rep.Errors) < 20 {
				rep.Errors = append(rep.Errors, fmt.Sprintf("event %s: %v", ev.ID, err))
			}
			s.log().Warn("summarize failed", "event", ev.ID, "err", err)
			told(ctx, StepFailed)
			if refusedBySummarizer {
				if herr := s.holdRefused(ctx, &rep, ev, model, prompt, err); herr != nil {
					return rep, herr
				}
			}
		case reinstated:
			rep.Reinstated++
			told(ctx, StepSummarized)
		case created:
			rep.Accepted++
			told(ctx, StepSummarized)
		default:
			rep.Unchanged++
		}
		if err == nil {
			if herr := hold(); herr != nil {
				return rep, herr
			}
		}
	}
	if len(passed) > 0 {
		// No later event was summarized: nothing tells these events from
		// an outage.
		p := passed[len(passed)-1]
		return rep, fmt.Errorf("summarizing: event %s (%q) refused %d rounds in a row%s, and no later event was summarized: %w",
			p.ev.ID, p.ev.Title, p.failures, passedNote(passed[:len(passed)-1]), tidemark.ErrUnavailable)
	}
	if firstRefusal != nil && rep.Accepted == 0 && rep.Unchanged == 0 && rep.Reinstated == 0 {
		// Not a success: nothing was summarized, and the summarizer is
		// why (an endpoint that answers nothing usable, a model that
		// refuses every input).
		return rep, fmt.Errorf("summarizing: %d of %d events failed and none was accepted; the first: %w: %w",
			rep.Failed, rep.Considered, firstRefusal, ErrNothingSummarized)
	}
	return rep, nil
}

// holdRefused counts an ordinary refusal of ev (an answer about that event:
// a 400, an unusable answer), which fails the event and not the round, and
// holds ev as the unavailable rule does (see HoldAfter) once it has been
// refused HoldAfter rounds in a row while the summarizer summarized other
// events since its first refusal: otherwise every round would ask, and
// pay, for it again. When every event is refused alike nothing is held:
// the configuration, not the event, is the trouble.
func (s *Service) holdRefused(ctx context.Context, rep *SummarizeReport, ev tidemark.Event, model, prompt string, refusal error) error {
	f := SummaryFailure{EventID: ev.ID, EvidenceHash: ev.EvidenceHash, Model: model, PromptVersion: prompt,
		Err: summarize.Cut(tidemark.Text(refusal), maxFailureBytes)}
	n, err := s.Store.SummaryFailed(ctx, f)
	if err != nil {
		return fmt.Errorf("record the failure of event %s: %w", ev.ID, err)
	}
	if n < HoldAfter {
		return nil
	}
	others, err := s.Store.SummarizedSince(ctx, f)
	if err != nil || !others {
		return err
	}
	until, err := s.Store.HoldSummary(ctx, f, holdFor(n))
	if err != nil {
		return fmt.Errorf("hold event %s: %w", ev.ID, err)
	}
	h := Held{EventID: ev.ID, Title: ev.Title, Failures: n, Until: until, Err: f.Err}
	rep.Held = append(rep.Held, h)
	if len(rep.Errors) < 20 {
		rep.Errors = append(rep.Errors, fmt.Sprintf("event %s (%q): held until %s: the summarizer refused it %d rounds in a row while it summarized other events: %s",
			h.EventID, h.Title, fieldtext.Day(h.Until), h.Failures, h.Err))
	}
	s.log().Warn("summarize: event held", "event", h.EventID, "title", h.Title, "failures", h.Failures, "until", h.Until, "err", h.Err)
	return nil
}

// lostRace reports whether the event has a summary of its evidence hash
// under model and prompt that another worker accepted, and leaves it the
// event's current one (Store.Reinstate: as it is when current; made
// current again if it was superseded since; a rejected one stays so).
func (s *Service) lostRace(ctx context.Context, ev tidemark.Event, hash, model, prompt string) bool {
	_, _, err := s.Store.Reinstate(ctx, ev.ID, hash, model, prompt)
	return err == nil || errors.Is(err, ErrRejected)
}

// holder is s.Holder, or one made for the service: its claims are its own.
func (s *Service) holder() string {
	s.holderOnce.Do(func() {
		if s.Holder != "" {
			s.madeHolder = s.Holder
			return
		}
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		s.madeHolder = "publish-" + hex.EncodeToString(b[:])
	})
	return s.madeHolder
}

// refusedEvent is an event a round passed over: the summarizer refused it
// failures rounds in a row, the last time as f says.
type refusedEvent struct {
	ev       tidemark.Event
	f        SummaryFailure
	failures int
}

// passedNote names the events a round passed over before it stopped.
func passedNote(passed []refusedEvent) string {
	if len(passed) == 0 {
		return ""
	}
	var ids []string
	for _, p := range passed {
		ids = append(ids, fmt.Sprintf("%s (%d rounds)", p.ev.ID, p.failures))
	}
	return "; passed over before it, refused as often: " + strings.Join(ids, ", ")
}

// PublishReport counts what PublishPending did.
type PublishReport struct {
	Published int `json:"published"`
	// PublishedElsewhere counts the pages this pass set out to publish (or
	// republish) that another publisher published with the same summary
	// while it ran (Result.Elsewhere): not failures, and not counted in
	// Published, Relinked or Restyled.
	PublishedElsewhere int      `json:"published_elsewhere"`
	Failed             int      `json:"failed"`
	Errors             []string `json:"errors,omitempty"`
	// Repaired and RepairFailed count the failed publications that lost
	// the race and repaired their page, and those whose repair failed.
	Repaired     int `json:"repaired"`
	RepairFailed int `json:"repair_failed"`
	// Relinked pages were republished because their neighbours changed.
	Relinked int `json:"relinked"`
	// Restyled pages were republished because they were published in an
	// earlier release's page format, or before their source was renamed.
	Restyled int `json:"restyled"`
	// Withdrawn pages were taken off the wiki: their summary was
	// rejected, or their source removed.
	Withdrawn int `json:"withdrawn"`
	// Listings is what RefreshListings wrote.
	Listings ListingReport `json:"listings"`
	// Pages is how many pages are published in all.
	Pages int `json:"pages"`
}

// fail counts a failure of the pass and keeps its error (the first 20).
func (rep *PublishReport) fail(err error) {
	rep.Failed++
	if len(rep.Errors) < 20 {
		rep.Errors = append(rep.Errors, tidemark.Text(err))
	}
}

func (rep *PublishReport) countRepair(res Result) {
	switch {
	case res.Repaired == nil:
	case res.RepairErr == nil:
		rep.Repaired++
	default:
		rep.RepairFailed++
	}
}

// PublishPending publishes up to limit current summaries whose pages do not
// show them yet, republishes the pages beside them, then refreshes the
// index and the source cards.
func (s *Service) PublishPending(ctx context.Context, limit int) (PublishReport, error) {
	var rep PublishReport
	s.checkAfresh()
	cards := &knownCards{}
	// What must leave the wiki leaves first, so the neighbours and the
	// listings below are done without it.
	if err := s.withdrawPending(ctx, limit, &rep); err != nil {
		return rep, err
	}
	if err := s.publishPending(ctx, limit, cards, &rep); err != nil {
		return rep, err
	}
	// Pages beside the new ones (and beside those withdrawn) link to them
	// once republished.
	relink, err := s.Store.Relink(ctx, limit)
	if err != nil {
		return rep, err
	}
	if err := s.publishAll(ctx, relink, cards, &rep, &rep.Relinked, StepRelinked); err != nil {
		return rep, err
	}
	// Pages an earlier release rendered take this one's format, up to
	// limit a pass.
	restyle, err := s.Store.Restyle(ctx, PageFormat(), limit)
	if err != nil {
		return rep, err
	}
	restyle = slices.DeleteFunc(restyle, func(id string) bool { return slices.Contains(relink, id) })
	if err := s.publishAll(ctx, restyle, cards, &rep, &rep.Restyled, StepRestyled); err != nil {
		return rep, err
	}
	if rep.Listings, err = s.RefreshListings(ctx); err != nil {
		return rep, err
	}
	rep.Pages, err = s.Store.PublishedCount(ctx)
	return rep, err
}

// PublishPendingPages publishes up to limit current summaries whose pages
// do not show them yet, and leaves the rest of PublishPending to a Sweep
// that follows: the sweep republishes the pages whose neighbours changed
// and refreshes the listings from the store's listing it reads anyway, so
// the two read the store's listing and the pages' neighbours once.
func (s *Service) PublishPendingPages(ctx context.Context, limit int) (PublishReport, error) {
	var rep PublishReport
	s.checkAfresh()
	if err := s.publishPending(ctx, limit, &knownCards{}, &rep); err != nil {
		return rep, err
	}
	var err error
	rep.Pages, err = s.Store.PublishedCount(ctx)
	return rep, err
}

// publishPending publishes up to limit current summaries whose pages do not
// show them yet.
func (s *Service) publishPending(ctx context.Context, limit int, cards *knownCards, rep *PublishReport) error {
	ids, err := s.Store.Unpublished(ctx, limit)
	if err != nil {
		return err
	}
	return s.publishAll(ctx, ids, cards, rep, &rep.Published, StepPublished)
}

// publishAll publishes the summaries ids, up to s.concurrency() at once,
// counting each success in *done and each failure in rep (see publishEach),
// and telling each as step or StepFailed (see WithProgress).
func (s *Service) publishAll(ctx context.Context, ids []string, cards *knownCards, rep *PublishReport, done *int, step Step) error {
	pending := step == StepPublished
	return s.publishEach(ctx, ids, func(id string) (Result, error) { return s.publish(ctx, id, true, pending, cards) },
		func(_ string, res Result, err error) {
			switch {
			case err == nil && res.Elsewhere:
				rep.PublishedElsewhere++
				return
			case err == nil:
				*done++
				told(ctx, step)
				return
			}
			rep.fail(err)
			rep.countRepair(res)
			told(ctx, StepFailed)
		})
}

// publishEach publishes each of ids with publish, up to s.concurrency() at
// once, and hands each outcome to done, one at a time; a page's failure is
// done's to count, and the others go on. It returns ctx's error if ctx
// ended (publications already started finish first, and those it cut short
// are no page's failure, so done is not told). A store the wiki is no
// longer bound to (ErrStoreMismatch: it was rebound since this service
// bound), or one that refuses our credentials (objstore.ErrDenied: it
// would refuse every page alike), is no page's failure either: no more
// publications start, and the first such error is returned.
func (s *Service) publishEach(ctx context.Context, ids []string, publish func(id string) (Result, error), done func(id string, res Result, err error)) error {
	var (
		mu   sync.Mutex
		g    errgroup.Group
		stop error // the store's answer to every page: ends the pass
	)
	g.SetLimit(s.concurrency())
	for _, id := range ids {
		mu.Lock()
		stopped := stop != nil
		mu.Unlock()
		if ctx.Err() != nil || stopped {
			break
		}
		g.Go(func() error {
			mu.Lock()
			stopped := stop != nil // while this one waited for its turn
			mu.Unlock()
			if stopped {
				return nil
			}
			res, err := publish(id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && ctx.Err() != nil:
			case errors.Is(err, ErrStoreMismatch), errors.Is(err, objstore.ErrDenied):
				if stop == nil {
					stop = err
				}
			default:
				done(id, res, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	if stop != nil {
		return stop
	}
	return ctx.Err()
}
