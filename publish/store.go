package publish

import (
	"context"
	"fmt"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/summarize"
)

// Errors of the publish pipeline. Each matches tidemark.ErrConflict (or
// ErrNotFound), so the binary maps them to exit codes in one place.
var (
	// ErrEvidenceMismatch: a summary was offered for evidence that is not
	// the event's current frozen evidence.
	ErrEvidenceMismatch = fmt.Errorf("publish: evidence hash is not the event's current one: %w", tidemark.ErrConflict)
	// ErrIdentityConflict: a summary with the same identity and different
	// content is already stored.
	ErrIdentityConflict = fmt.Errorf("publish: same identity, different content: %w", tidemark.ErrConflict)
	// ErrRejectedAlready: a summary that was rejected is rejected again
	// for another reason; the first rejection stands (RejectedAlreadyError
	// says when and why it was made).
	ErrRejectedAlready = fmt.Errorf("publish: summary rejected already: %w", tidemark.ErrConflict)
	// ErrNotRejected: a rejection is lifted from a summary that is not
	// rejected.
	ErrNotRejected = fmt.Errorf("publish: summary not rejected: %w", tidemark.ErrConflict)
	// ErrRejected: the summary was rejected and is never published.
	ErrRejected = fmt.Errorf("publish: summary rejected: %w", tidemark.ErrConflict)
	// ErrSuperseded: the summary is no longer the event's current one (or
	// the event's evidence moved); refused before anything was written.
	ErrSuperseded = fmt.Errorf("publish: summary superseded: %w", tidemark.ErrConflict)
	// ErrLostRace: the conditional mark matched nothing: a newer summary
	// became current while this one was being written.
	ErrLostRace = fmt.Errorf("publish: lost the race to a newer summary: %w", tidemark.ErrConflict)
	// ErrNewerPublished: a newer generation of the page is already marked.
	ErrNewerPublished = fmt.Errorf("publish: a newer generation of the page is published: %w", tidemark.ErrConflict)
	// ErrNothingSummarized: a round's summarizer failed every event it
	// was given, and accepted none. It matches tidemark.ErrUnavailable
	// (exit 5): the summarizer did not do its work.
	ErrNothingSummarized = fmt.Errorf("publish: no summary accepted: %w", tidemark.ErrUnavailable)
	// ErrReadBack: the body read back is not the body written.
	ErrReadBack = fmt.Errorf("publish: read-back differs from the body written: %w", tidemark.ErrUnconfirmed)
)

// Summary is an accepted (or rejected) summary of an event.
type Summary struct {
	ID                  string     `json:"id"`
	EventID             string     `json:"event_id"`
	EvidenceHash        string     `json:"evidence_hash"`
	PromptVersion       string     `json:"prompt_version"`
	Model               string     `json:"model"`
	Text                string     `json:"text"`
	TextHash            string     `json:"text_hash"`
	Current             bool       `json:"current"`
	RejectedReason      string     `json:"rejected_reason,omitempty"`
	RejectedAt          *time.Time `json:"rejected_at,omitempty"`
	PublishedAt         *time.Time `json:"published_at,omitempty"`
	PublishedGeneration int64      `json:"published_generation"`
	RetiredAt           *time.Time `json:"retired_at,omitempty"`
	CreatedAt           time.Time  `json:"created_at"`
	// Lifted are the rejections of the summary an operator lifted
	// (Unreject), oldest first.
	Lifted []LiftedRejection `json:"lifted,omitempty"`
}

// LiftedRejection is a rejection of a summary lifted by an operator: what
// the rejection said and when, and why and when it was lifted.
type LiftedRejection struct {
	RejectedReason string    `json:"rejected_reason"`
	RejectedAt     time.Time `json:"rejected_at"`
	Reason         string    `json:"reason"`
	At             time.Time `json:"at"`
}

// RejectedAlreadyError refuses a second rejection of a summary for another
// reason, and says when and why the first was made. It matches
// ErrRejectedAlready (and so tidemark.ErrConflict).
type RejectedAlreadyError struct {
	Summary string
	At      time.Time
	Reason  string
}

func (e *RejectedAlreadyError) Error() string {
	return fmt.Sprintf("summary %s was rejected already at %s: %q; that rejection stands", e.Summary, fieldtext.Day(e.At), e.Reason)
}

func (e *RejectedAlreadyError) Unwrap() error { return ErrRejectedAlready }

// Rejected reports whether the summary was rejected.
func (s Summary) Rejected() bool { return s.RejectedReason != "" }

// State is the summary's one-word state: rejected, published, current
// (accepted, not yet on its page) or superseded (by a newer summary of its
// event). Stats counts the same states, with published among current.
func (s Summary) State() string {
	switch {
	case s.Rejected():
		return "rejected"
	case s.Current && s.PublishedAt != nil:
		return "published"
	case s.Current:
		return "current"
	}
	return "superseded"
}

// NewSummary is a draft offered for acceptance against the evidence hash
// it was made from.
type NewSummary struct {
	EventID      string
	EvidenceHash string
	summarize.Draft
}

// SummaryFailure is a failure to summarize an event's evidence under a
// model and prompt version.
type SummaryFailure struct {
	EventID       string
	EvidenceHash  string
	Model         string
	PromptVersion string
	// Err is the failure, for people.
	Err string
}

// SummaryClaim is a worker's claim on asking the summarizer about an
// event under a model and prompt version, so concurrent publishers (several
// daemons, a daemon and `publish`) do not pay the model for the same event
// twice.
type SummaryClaim struct {
	EventID       string
	Model         string
	PromptVersion string
	Holder        string
}

// SummaryClaimed is what Store.ClaimSummary answers.
type SummaryClaimed struct {
	// OK: the caller holds the claim now.
	OK bool
	// Holder and Until are the claim that stands: the caller's when OK,
	// another holder's otherwise (alive, on another host, or a custom
	// identity; a gone holder's claim is taken over, never answered).
	Holder string
	Until  time.Time
	// TookOver names the gone holder whose claim the caller took over
	// ("" when none).
	TookOver string
}

// SourceInfo is what a page shows of its source.
type SourceInfo struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Location string `json:"location"`
}

// Plan is a publication that passed its pre-checks: the page, the
// generation allocated for this write, and everything the page shows.
type Plan struct {
	PageID     string
	Generation int64
	Event      tidemark.Event
	Source     SourceInfo
	Summary    Summary
	// PageURL is where readers find the page, when the service knows
	// (Service.BaseURL); hooks receive it.
	PageURL string
	// Title is the title the page shows (an editor's override included),
	// and SearchText the page's readable text; the mark records both, so
	// listings, feeds, posts and search show what the page shows.
	Title      string
	Headline   string
	SearchText string
	// Older and Newer are the page's neighbours among its source's pages
	// (by time), as the body links to them; the mark records them.
	Older, Newer *PageLink
	// Published is what the page was marked published with when the
	// pre-checks ran (the zero value: never).
	Published PublishedAs
}

// PublishedAs is a page's publication as the books record it: the summary
// it shows, at which generation, with which ETag.
type PublishedAs struct {
	SummaryID  string
	Generation int64
	ETag       string
}

// PageLink is a link to another change page.
type PageLink struct {
	PageID string
	Title  string
}

// Neighbours is the plan's links as recorded, "older/title|newer/title"
// with the titles as stored: a neighbour that moves or is retitled makes
// the page's recorded neighbours differ from its actual ones.
func (p Plan) Neighbours() string {
	link := func(l *PageLink) string {
		if l == nil {
			return ""
		}
		return l.PageID + "/" + l.Title
	}
	return link(p.Older) + "|" + link(p.Newer)
}

// Written is what the object store confirmed.
type Written struct {
	ETag string
	// Format is the page format the body was rendered in (PageFormat).
	Format string
	// Store is the store the body was written to, as the wiki was bound
	// to it (the zero identity while the wiki is bound to none).
	Store StoreIdentity
}

// PageState is a page's bookkeeping, for the sweeper.
type PageState struct {
	PageID   string
	EventID  string
	SourceID string
	// SummaryID is the event's pointer ("" when the event has no current
	// summary); PointerFresh says its evidence hash is the event's current.
	SummaryID          string
	PointerFresh       bool
	PublishedSummaryID string
	PublishedETag      string
	// PublishedGeneration is the generation marked published; Absent says
	// the books record the page's object missing from the store.
	PublishedGeneration int64
	Absent              bool
}

// Absence is what a sweep found of a published page's object: missing
// from the store (Absent) or there, when the page's published generation
// was Generation.
type Absence struct {
	PageID     string
	Generation int64
	Absent     bool
}

// PageEntry is a published page in a listing.
type PageEntry struct {
	PageID     string
	EventID    string
	SourceID   string
	Title      string
	OccurredAt time.Time
	// PublishedAt is when the page was last published; Summary is the
	// published summary's text (for feeds).
	PublishedAt time.Time
	Summary     string
	// Headline is the change in one line, when it says more than the title.
	Headline string
}

// SourceEntry is a source with published pages, for the index.
type SourceEntry struct {
	SourceInfo
	Pages int
	// Stamp changes whenever a page of the source is published, republished
	// or withdrawn.
	Stamp string
}

// WikiObject is a listing object's bookkeeping.
type WikiObject struct {
	Key         string
	Kind        string // "card" or "index"
	SourceID    string
	ETag        string
	ContentHash string
	Stamp       string
}

// Store is what the publish pipeline needs from storage. sqlstore
// implements it for SQLite and PostgreSQL.
type Store interface {
	// Accept stores a summary if its evidence hash is the event's current
	// one. The same identity with the same text returns the stored summary
	// (created false), reinstated if another superseded it (see
	// Reinstate); with different text, ErrIdentityConflict. A new
	// summary becomes current, retires the previous one and moves the
	// event's pointer, in one transaction.
	Accept(ctx context.Context, ns NewSummary) (s Summary, created bool, err error)
	// Reject marks a summary rejected with a reason; if it was current the
	// event's pointer is cleared and the page is withdrawn by the sweeper.
	// Rejecting a rejected summary again for the same reason is a harmless
	// replay that returns it; for another reason it is a
	// *RejectedAlreadyError, and the first rejection stands.
	Reject(ctx context.Context, summaryID, reason string) (Summary, error)
	// Unreject lifts a summary's rejection, for a reason (required),
	// keeping the rejection on record (Summary.Lifted). A summary of the
	// event's current evidence becomes current again, retiring the one
	// current and moving the event's pointer, in one transaction; one of
	// older evidence stays superseded. ErrNotRejected if it is not
	// rejected.
	Unreject(ctx context.Context, summaryID, reason string) (Summary, error)
	// Reinstate makes the summary of the event's evidence evidenceHash
	// under model and promptVersion current again, when a summary of
	// another model or prompt superseded it (a summarizer switched back):
	// the identity is taken, so it cannot be accepted anew. It retires the
	// one current and moves the event's pointer, in one transaction
	// (reinstated true); the current summary is returned as it is
	// (reinstated false: another worker may have accepted it since the
	// caller listed the event). tidemark.ErrNotFound if the event has no
	// summary of that identity, ErrRejected if it was rejected,
	// ErrEvidenceMismatch if evidenceHash is not the event's.
	Reinstate(ctx context.Context, eventID, evidenceHash, model, promptVersion string) (s Summary, reinstated bool, err error)
	Summary(ctx context.Context, id string) (Summary, error)
	Summaries(ctx context.Context, f SummaryFilter) ([]Summary, error)
	// Unsummarized lists events whose current summary is not one of
	// their current evidence under model and promptVersion, oldest first:
	// those with no summary of that identity, and those whose summary of
	// it another model or prompt superseded (see Reinstate). It leaves
	// out the events whose summary of that identity was rejected, and
	// those held (HoldSummary) for that evidence, model and prompt version.
	Unsummarized(ctx context.Context, model, promptVersion string, limit int) ([]tidemark.Event, error)
	// SummaryFailed records that summarizing f's event, its evidence
	// f.EvidenceHash, under f.Model and f.PromptVersion failed again (with
	// f.Err), and returns how many times in a row it has failed: this one
	// included, starting over at 1 for other evidence than the failures
	// before. Accepting a summary of the event under that model and prompt
	// version forgets its failures.
	SummaryFailed(ctx context.Context, f SummaryFailure) (int, error)
	// ClaimSummary claims c for ttl from now (the store's clock). Another
	// holder's claim on the same event, model and prompt version stands
	// until it expires, unless that holder is a process of this host that
	// is gone (see ingest.Liveness: it was killed while it asked the
	// summarizer), whose claim is taken over at once; while one stands,
	// ClaimSummary changes nothing and answers whose it is and until
	// when. The same holder claims again and extends. A claim needs a
	// holder.
	ClaimSummary(ctx context.Context, c SummaryClaim, ttl time.Duration) (SummaryClaimed, error)
	// ReleaseSummary drops c if its holder still holds it.
	ReleaseSummary(ctx context.Context, c SummaryClaim) error
	// SummarizedSince reports whether a summary of another event than f's
	// was accepted under f.Model and f.PromptVersion since f's event first
	// failed in its current count (SummaryFailed): the summarizer answers
	// for others, so the trouble is the event.
	SummarizedSince(ctx context.Context, f SummaryFailure) (bool, error)
	// HoldSummary holds f's event for d from now (the store's clock):
	// Unsummarized leaves it out until then, while its evidence is still
	// f.EvidenceHash. It returns until when.
	HoldSummary(ctx context.Context, f SummaryFailure, d time.Duration) (time.Time, error)
	// HeldSummaries lists the events Unsummarized leaves out because
	// they are held (HoldSummary) for their current evidence under model
	// and promptVersion, the soonest to be tried again first, at most
	// limit: each with its failures in a row, the last one, and until
	// when it is held.
	HeldSummaries(ctx context.Context, model, promptVersion string, limit int) ([]Held, error)
	// Evidence is an event's current frozen evidence and its hash.
	Evidence(ctx context.Context, eventID string) ([]byte, string, error)
	// Revision is an event's frozen evidence at an earlier revision and its
	// hash (earlier revisions are kept); tidemark.ErrNotFound if none.
	Revision(ctx context.Context, eventID string, revision int) ([]byte, string, error)
	// SourceOf is what pages and summarizers need of a source.
	SourceOf(ctx context.Context, sourceID string) (SourceInfo, error)
	// Unpublished lists current summaries whose page does not have them
	// marked published.
	Unpublished(ctx context.Context, limit int) ([]string, error)

	// Prepare runs the pre-checks (not rejected, current, the event points
	// at it, the evidence hash unchanged) and allocates the page's next
	// generation; ErrRejected or ErrSuperseded otherwise. The plan says
	// what the page is marked published with (Plan.Published).
	Prepare(ctx context.Context, summaryID string) (Plan, error)
	// Mark marks the plan's summary published if it is still current, the
	// event still points at it with the same evidence hash, and no newer
	// generation is marked. What other pipelines write with a mark (the
	// outbox's drafts) commits in the same transaction, or the mark does
	// not. ErrLostRace when the summary lost. The page is no longer
	// recorded absent. A body written to another store than the one the
	// wiki is bound to (a worker that missed a rebind) is not marked: the
	// error matches ErrStoreMismatch.
	Mark(ctx context.Context, p Plan, w Written) (tidemark.Publication, error)
	// CurrentSummary is the summary the event points at ("" when none).
	CurrentSummary(ctx context.Context, eventID string) (string, error)

	// PageStates calls fn for every page, in page ID order.
	PageStates(ctx context.Context, fn func(PageState) error) error
	// PageState is one page's bookkeeping, as PageStates gives it;
	// tidemark.ErrNotFound if there is no such page.
	PageState(ctx context.Context, pageID string) (PageState, error)
	// Withdraw clears a page's published state (and its absence) if the
	// event still has no current summary; it reports whether it did, and
	// when it did not, the generation the page is published in now (0:
	// none), for the caller that deleted its object to record it absent.
	Withdraw(ctx context.Context, pageID string) (withdrawn bool, published int64, err error)
	// Withdrawable lists, up to limit, the published pages whose event
	// has no current summary any more (it was rejected), with their
	// published generation, in page ID order.
	Withdrawable(ctx context.Context, limit int) ([]Absence, error)
	// RemovedPages lists, up to limit, the pages deleted with their
	// source whose objects may still be in the store; ForgetRemoved
	// forgets them once their objects are deleted.
	RemovedPages(ctx context.Context, limit int) ([]string, error)
	ForgetRemoved(ctx context.Context, pageIDs []string) error

	// Listing data for the index and the source cards.
	Sources(ctx context.Context) ([]SourceEntry, error)
	// Neighbours are a page's older and newer neighbours among the pages
	// of its source that have a current summary, by (occurred at, page
	// ID); nil at either end.
	// The page's event is ev.
	Neighbours(ctx context.Context, pageID string, ev tidemark.Event) (older, newer *PageLink, err error)
	// Relink lists the current summaries of published pages whose recorded
	// neighbours are no longer their neighbours (a change arrived beside
	// them, or a neighbour was withdrawn), in page ID order.
	Relink(ctx context.Context, limit int) ([]string, error)
	// Restyle lists the current summaries of published pages published in
	// another page format than format (an earlier release's, or none: a
	// rename of their source marks its pages so), in page ID
	// order; limit 0 lists them all.
	Restyle(ctx context.Context, format string, limit int) ([]string, error)
	// Listing lists published pages newest first.
	Listing(ctx context.Context, q ListingQuery) ([]PageEntry, error)
	// AbsentPages calls fn for every published page recorded absent from
	// the object store, in page ID order.
	AbsentPages(ctx context.Context, fn func(pageID, sourceID string) error) error
	// RecordAbsence records each page of found absent or present, if its
	// published generation is still the one found (a page published since
	// was proved present by its read-back). What was found is of the store
	// the wiki was bound to as store (the zero identity while it is bound
	// to none); if the wiki is bound to another one since, nothing is
	// recorded and the error matches ErrStoreMismatch.
	RecordAbsence(ctx context.Context, store StoreIdentity, found []Absence) error
	PublishedCount(ctx context.Context) (int, error)
	// WikiObjects lists the listing objects' bookkeeping.
	WikiObjects(ctx context.Context) ([]WikiObject, error)
	// AllocateObject allocates the next generation of a listing object,
	// creating its row.
	AllocateObject(ctx context.Context, key, kind, sourceID string) (int64, error)
	// RecordObject records a listing object's write if no newer one is
	// recorded.
	RecordObject(ctx context.Context, key string, generation int64, etag, contentHash, stamp string) error
	// RestampObjects records stamp on each of objs (listing objects a
	// refresh rendered from the state stamp names and found unchanged)
	// whose record is still the one given: the same ETag and content hash.
	// A record written since is left as it is.
	RestampObjects(ctx context.Context, stamp string, objs []WikiObject) error
	// ForgetObject forgets a collected listing object's recorded version;
	// its generation counter is kept, so generations never restart.
	ForgetObject(ctx context.Context, key string) error

	// BoundStore is the object store the wiki was bound to at its first
	// publication; ok is false when it is bound to none yet.
	BoundStore(ctx context.Context) (id StoreIdentity, ok bool, err error)
	// BindStore records id as the wiki's store unless one is recorded, and
	// returns the one recorded (id, or another binder's that came first).
	BindStore(ctx context.Context, id StoreIdentity) (StoreIdentity, error)
	// RebindStore records id as the wiki's store, replacing any other; if
	// it is another store, every published page is recorded absent until
	// a publication or a sweep finds it there.
	RebindStore(ctx context.Context, id StoreIdentity) (StoreIdentity, error)
}

// BatchMarker is implemented by stores that can write the marks of many
// publications in one transaction (group commit), each with its own
// conditions: a mark that fails them fails alone, with the error Mark
// would have returned, and the others commit. The results are in the
// order of the plans. MaxMarks bounds the marks of one call; at most 1,
// the store writes marks side by side better than in batches, and each is
// written with Mark.
type BatchMarker interface {
	MarkMany(ctx context.Context, ps []Plan, ws []Written) ([]tidemark.Publication, []error)
	MaxMarks() int
}

// ListingQuery narrows Listing: one source's pages ("" for all), at most
// Limit (0: all), with their summaries' text only when Summaries is set.
type ListingQuery struct {
	SourceID  string
	Limit     int
	Summaries bool
}

// SummaryFilter narrows a listing; Limit 0 means 100. BeforeID pages:
// only summaries strictly older than (BeforeCreatedAt, BeforeID), the last
// summary of the previous page.
type SummaryFilter struct {
	EventID         string
	Limit           int
	BeforeCreatedAt time.Time
	BeforeID        string
}
