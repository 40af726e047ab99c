package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/fieldtext"
)

// State is where an intent is in its life.
type State string

const (
	// StatePending: queued, to be sent in rank order.
	StatePending State = "pending"
	// StateSending: journaled; the provider may have been called.
	StateSending State = "sending"
	// StateLanded: verified landed, exactly once.
	StateLanded State = "landed"
	// StateUnresolved: an attempt's outcome is unknown and no fresh answer
	// has decided it yet.
	StateUnresolved State = "unresolved"
	// StateUnexecutable: the target cannot accept a write (reversible).
	StateUnexecutable State = "unexecutable"
	// StateRetired: given up by policy or by an operator (reversible).
	StateRetired State = "retired"
	// StateCollision: drafted by a publication with the same remote
	// identity (target, parent, body) as an earlier intent, which a
	// provider could not tell apart from it. It is never sent and stays out
	// of reconciliation's join; an operator retires it, or revives it once
	// the earlier one is retired (reversible).
	StateCollision State = "collision"
)

// Intent is one outbound write to make, once.
type Intent struct {
	ID             string `json:"id"`
	Lane           string `json:"lane"`
	Rank           int64  `json:"rank"`
	Target         string `json:"target"`
	Parent         string `json:"parent"`
	Body           string `json:"body"`
	BodySHA256     string `json:"body_sha256"`
	IdempotencyKey string `json:"idempotency_key"`
	State          State  `json:"state"`
	StateReason    string `json:"state_reason"`
	RemoteID       string `json:"remote_id"`
	SourceID       string `json:"source_id,omitempty"`
	PageID         string `json:"page_id,omitempty"`
	// ChannelID and SummaryID, with PageID, are the intent's origin: the
	// channel and the publication that drafted it (empty for a draft made
	// by hand). An intent is unique by its origin.
	ChannelID string     `json:"channel_id,omitempty"`
	SummaryID string     `json:"summary_id,omitempty"`
	Attempts  int        `json:"attempts"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	LandedAt  *time.Time `json:"landed_at"`
	// LastAttemptAt is the start of the latest attempt, if any.
	LastAttemptAt *time.Time `json:"last_attempt_at"`
	// AttemptUntil is until when the latest attempt's write could still
	// land: its start plus the bound its request was sent under (nil for
	// an attempt journaled before it was recorded).
	AttemptUntil *time.Time `json:"-"`
	// FirstAttemptAt is the start of the intent's first attempt: when the
	// remote first saw its idempotency key, from which a key's window runs
	// (nil before any attempt).
	FirstAttemptAt *time.Time `json:"first_attempt_at"`
	// KeyScope is the scope (provider.KeyScoped) every attempt of the
	// intent sent its idempotency key in: "" once attempts were sent in
	// two, or by a provider that names none; nil before any attempt, or
	// when the attempts predate the record. Only in that scope can the key
	// decide a write in doubt.
	KeyScope *string `json:"-"`
}

// attemptStart is when the latest attempt began: LastAttemptAt, or for a
// journal without one, the last change.
func (in Intent) attemptStart() time.Time {
	if in.LastAttemptAt != nil {
		return *in.LastAttemptAt
	}
	return in.UpdatedAt
}

// firstAttemptStart is when the intent's first attempt began: when its
// idempotency key was first sent (a server remembers a key from the first
// request that carried it, and a resend does not extend that), and the
// earliest any of its writes can have been made. For a journal without
// it, the latest attempt's start.
func (in Intent) firstAttemptStart() time.Time {
	if in.FirstAttemptAt != nil {
		return *in.FirstAttemptAt
	}
	return in.attemptStart()
}

// attemptUntil is until when the latest attempt could still land: as
// recorded, or for an attempt journaled without it, its start plus bound.
func (in Intent) attemptUntil(bound time.Duration) time.Time {
	if in.AttemptUntil != nil {
		return *in.AttemptUntil
	}
	return in.attemptStart().Add(bound)
}

// Identity returns the intent's identity.
func (in Intent) Identity() Identity {
	return Identity{Target: in.Target, Parent: in.Parent, BodySHA256: in.BodySHA256}
}

// Draft is an intent to be drafted.
type Draft struct {
	Lane     string
	Target   string
	Parent   string
	Body     string
	SourceID string
	// The origin of a draft a publication makes (see Intent).
	PageID    string
	ChannelID string
	SummaryID string
}

// Lane is one provider account with its writer's lease and pacing gate.
type Lane struct {
	LaneConfig

	LeaseToken     int64      `json:"lease_token"`
	LeaseHolder    string     `json:"lease_holder"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`
	// ClaimState is the state of the writer's lease when the lane was read
	// for people (the store's Lanes and LaneDetail), by the rule a
	// source's claim is shown by (tidemark.ClaimState): running while it
	// stands, gone when its holder is a process of the reading host that
	// is no longer running, expired once its lease ran out; "" while no
	// writer holds the lane. A gone or expired writer sends nothing: the
	// next delivery takes the lane over.
	ClaimState tidemark.ClaimState `json:"claim_state"`
	// NextSendAt is the earliest the next write may be sent: nil until
	// the lane's first send (a write may go at any time).
	NextSendAt     *time.Time    `json:"next_send_at"`
	LastSendAt     *time.Time    `json:"last_send_at"`
	NeedsReconcile bool          `json:"needs_reconcile"`
	InFlight       string        `json:"in_flight"`
	Counts         map[State]int `json:"counts"`
	// Refusal, when set, is why the provider refused the lane's latest
	// write of an intent still pending: the lane is broken until a write
	// goes through (LaneView.Problem shows it).
	Refusal string `json:"-"`
	// ReadRefusal, when set, is why the provider refused a read the lane
	// needs to decide its writes in doubt (its listing of our own writes)
	// for a reason that is the lane's (a missing scope, a channel the
	// account is not in): the lane is broken until a reconciliation goes
	// through (LaneView.Problem shows it).
	ReadRefusal string `json:"-"`
	// LastReconciliation is what the lane's latest reconciliation found of
	// own writes that no intent explains (nil before the first).
	LastReconciliation *LastReconciliation `json:"last_reconciliation"`
	// Failing, when set, is the run of delivery steps that failed in a row
	// and has not ended (nil when the latest step went through).
	Failing *LaneFailure `json:"failing"`
}

// LaneFailure is a lane's run of delivery steps that failed in a row (a
// receiver down, a read before a write refused a connection), as every
// Deliverer's Step records it: the daemon retries them with a growing
// pause, and the lane shows failing until one goes through.
type LaneFailure struct {
	// Since is when the first of them failed; At, the latest.
	Since    time.Time `json:"since"`
	At       time.Time `json:"at"`
	Failures int       `json:"failures"`
	// Last is the latest one's error.
	Last string `json:"last"`
}

// LastReconciliation is what a lane's latest reconciliation found of own
// writes no intent explains: ones that matched no intent (another tool's
// writes under the account, or duplicates whose text the provider changed)
// and ones that repeated a landed intent (duplicates). Each is a write to
// go and look at.
type LastReconciliation struct {
	At                 time.Time `json:"at"`
	UnmatchedOwnWrites int       `json:"unmatched_own_writes"`
	DuplicateOwnWrites int       `json:"duplicate_own_writes"`
	// RemoteIDs are the first MaxLastReconciliationIDs of their remote ids,
	// the duplicates first.
	RemoteIDs []string `json:"remote_ids"`
}

// MaxLastReconciliationIDs bounds the remote ids a lane keeps of its last
// reconciliation (outbox reconcile lists every one).
const MaxLastReconciliationIDs = 20

// VerdictRefused is the verdict of the check kept when the provider
// refused a write for a reason that is the lane's (OutcomeRefused).
const VerdictRefused = "refused"

// Lease is a writer's fence on a lane. Token only grows; a transition that
// presents an older token changes nothing.
type Lease struct {
	Lane      string
	Holder    string
	Token     int64
	ExpiresAt time.Time
}

// Attempt is one journaled try at an intent.
type Attempt struct {
	ID        string
	IntentID  string
	Lane      string
	Token     int64
	StartedAt time.Time
	// Until is the attempt's deadline: its write is sent under a bound
	// that ends then, and could still land until then.
	Until       time.Time
	CountBefore *int64
}

// Outcome is what an attempt came to.
type Outcome string

const (
	OutcomeLanded       Outcome = "landed"
	OutcomeNotLanded    Outcome = "not_landed"
	OutcomeDeferred     Outcome = "deferred"
	OutcomeUnexecutable Outcome = "unexecutable"
	OutcomeUnknown      Outcome = "unknown"
	// OutcomeRefused: the provider answered and refused the write for a
	// reason that is the lane's or ours (credentials, a malformed or
	// oversized request), not its target's: it did not land, the intent
	// stays pending, and the lane stops sending until that is fixed.
	OutcomeRefused Outcome = "refused"
)

// Result is an attempt's outcome, as recorded.
type Result struct {
	Outcome      Outcome
	RemoteID     string
	SentAt       time.Time // when the provider was called; zero if it was not
	CountAfter   *int64
	CountVerdict CountVerdict
	Error        string
	// RetryAfter pushes the lane's gate (Retry-After).
	RetryAfter time.Duration
}

// Reconciliation is what a reconciliation decided, recorded in one
// transaction by Store.Apply.
type Reconciliation struct {
	Plan *Plan
	// Checks are the evidence of each check of an unresolved or
	// unexecutable intent, keyed by intent id.
	Checks map[string]Check
	// Reasons are, for unresolved intents, why each stays so (its state
	// reason); one without: "no fresh answer yet".
	Reasons map[string]string
	// Retire names intents the retirement policy retires, with why.
	Retire map[string]string
	// Revive names unexecutable intents whose target accepts writes again.
	Revive []string
	// RecheckAt, when set, is when a check could decide what this one
	// could not (an attempt that could still land until then): the lane
	// is looked at again then, rather than after the policy's spacing.
	RecheckAt *time.Time
}

// NewAttempt is what the journal records of an attempt before it is made.
type NewAttempt struct {
	IntentID string
	// CountBefore is the provider's count of our writes read just before
	// (nil: the provider has no counter).
	CountBefore *int64
	// Bound is how long the write may take: the attempt could land until
	// its start plus Bound (Intent.AttemptUntil).
	Bound time.Duration
	// KeyScope is the scope the provider sends the idempotency key in now
	// (provider.KeyScoped; "" when it names none).
	KeyScope string
}

// Store is the outbox's storage. Every method that changes a lane's
// journal takes the writer's Lease and fails with tidemark.ErrStaleClaim,
// changing nothing, when its token is no longer current.
type Store interface {
	Lane(ctx context.Context, name string) (Lane, error)
	// Draft drafts an intent at the end of its lane (tidemark.ErrConflict
	// for a duplicate identity: drafts made by hand are refused; one a
	// publication makes is kept as StateCollision).
	Draft(ctx context.Context, d Draft) (Intent, error)
	// Acquire takes the lane's lease with a new, higher token
	// (*LeaseHeldError, tidemark.ErrClaimHeld, while another holder's
	// lease runs). A lease whose holder is a process of this host that is
	// gone (see ingest.Liveness) is taken over at once, as an expired one
	// is: an attempt it left open is in doubt and is reconciled.
	Acquire(ctx context.Context, lane, holder string, ttl time.Duration) (Lease, error)
	// Renew extends a lease that is still current.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	Release(ctx context.Context, l Lease) error
	// CheckLease confirms the lease is current, right before a send.
	CheckLease(ctx context.Context, l Lease) error
	// NextPending returns the lowest-ranked pending intent (ok false: none).
	NextPending(ctx context.Context, l Lease) (Intent, bool, error)
	// InDoubt reports whether the lane must reconcile before sending again:
	// an attempt is open (its process died), an outcome was unknown, or
	// unresolved and unexecutable intents are due for another check.
	InDoubt(ctx context.Context, l Lease) (bool, error)
	// Begin journals an attempt and commits it, through the pacing gate:
	// ErrGateClosed until the lane's next send time, and one attempt in
	// flight per lane.
	Begin(ctx context.Context, l Lease, a NewAttempt) (Attempt, error)
	// Finish records an attempt's result and moves the gate.
	Finish(ctx context.Context, l Lease, a Attempt, r Result) error
	// Bucket moves a pending intent to unexecutable without an attempt.
	Bucket(ctx context.Context, l Lease, intentID, reason string, check Check) error
	// Intents returns the lane's intents that are neither retired nor in
	// collision, in rank order: the ones reconciliation joins.
	Intents(ctx context.Context, l Lease) ([]Intent, error)
	// LastChecks returns each intent's recorded checks, oldest first.
	Checks(ctx context.Context, intentID string) ([]Check, error)
	// Apply records a reconciliation in one transaction; it clears the
	// lane's ReadRefusal.
	Apply(ctx context.Context, l Lease, r Reconciliation) error
	// RefuseRead records why the provider refused a read the lane needs
	// (Lane.ReadRefusal), changing nothing else: the lane stays in doubt.
	RefuseRead(ctx context.Context, l Lease, reason string) error
	// KeepRead keeps how far a read of the lane's own writes got, for a
	// later pass to go on from, in place of any kept before. Apply
	// discards it, as does DropRead.
	KeepRead(ctx context.Context, l Lease, p ReadProgress) error
	// KeptRead returns the lane's kept read (ok false: none).
	KeptRead(ctx context.Context, l Lease) (p ReadProgress, ok bool, err error)
	// DropRead discards the lane's kept read, if any.
	DropRead(ctx context.Context, l Lease) error
	// RecordLaneFailure records a delivery step of the lane that failed
	// at at with failure (Lane.Failing): the first of a run starts it,
	// each adds to it. It takes no lease: it is the lane's health, not
	// its delivery (tidemark.ErrNotFound for no such lane).
	RecordLaneFailure(ctx context.Context, lane string, at time.Time, failure string) error
	// ClearLaneFailure ends the lane's run of failed delivery steps: one
	// went through. A lane not failing is left as it is.
	ClearLaneFailure(ctx context.Context, lane string) error
	// Undecided counts the lane's intents whose write waits for its
	// outcome to be decided: sending, and unresolved until a later check.
	Undecided(ctx context.Context, lane string) (sending, unresolved int, err error)
}

// ReadProgress is how far a reconciliation's read of the lane's own
// writes got before it stopped (the provider asked it to wait, or a page
// failed): the writes its pages showed and the cursor of the next page. A
// later pass goes on from Cursor, rather than from the listing's head,
// when its read has the same Key; see Deliverer.
type ReadProgress struct {
	// Key names the read: what the listing reads (provider.Resumable's
	// ListScope), how far back (the listing's Since), and the writes in
	// doubt it is to decide, each with its latest attempt.
	Key string `json:"key"`
	// Cursor is the page to read next.
	Cursor string `json:"cursor"`
	// Listing is what the pages read so far showed.
	Listing Listing `json:"listing"`
}

// GateClosedError: the lane's pacing gate opens at Until.
type GateClosedError struct{ Until time.Time }

func (e *GateClosedError) Error() string {
	return "outbox: pacing gate closed until " + e.Until.UTC().Format(time.RFC3339Nano)
}

// ErrGateClosed matches *GateClosedError.
var ErrGateClosed = errors.New("outbox: pacing gate closed")

func (e *GateClosedError) Is(target error) bool { return target == ErrGateClosed }

// LeaseHeldError: another writer holds the lane's lease until Until. It
// matches tidemark.ErrClaimHeld. A lease whose holder is a process of this
// host that is gone is never refused so (see Store.Acquire): Holder is
// alive, on another host, or a custom --holder.
type LeaseHeldError struct {
	Lane   string
	Holder string
	Until  time.Time
	// Running: Holder is a process of this host (host:pid) that is
	// running, as far as this host can tell.
	Running bool
}

// Error does not name the lane: the lane's error that carries it does
// (OfLane).
func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("held by %s until %s", e.Holder, fieldtext.Day(e.Until))
}

func (e *LeaseHeldError) Is(target error) bool { return target == tidemark.ErrClaimHeld }

// Hint says what to do: a running process of this host is delivering the
// lane and must not be impersonated (two writers of one identity would both
// re-enter its lease); any other holder may be this worker under another
// identity.
func (e *LeaseHeldError) Hint() string {
	until := fieldtext.Day(e.Until)
	if e.Running {
		pid := e.Holder[strings.LastIndexByte(e.Holder, ':')+1:]
		return fmt.Sprintf("it is process %s of this host, still running and delivering lane %s: let it, or stop it;"+
			" the lane is free once its lease expires at %s", pid, e.Lane, until)
	}
	return fmt.Sprintf("if that was this worker under another identity, run again with --holder %s to take its lease back;"+
		" otherwise lane %s is free once its lease expires at %s", e.Holder, e.Lane, until)
}
