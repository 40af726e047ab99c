package content

import (
	"context"
	"fmt"
	"time"
)

// Store is what documents and migrations need from storage. sqlstore
// implements it for SQLite and PostgreSQL.
//
// Every document write goes through one versioned write: the live row is
// updated only if it is still at the version the write was based on, and
// the new version's snapshot is inserted in the same transaction.
type Store interface {
	CreateCollection(ctx context.Context, name string, fields []Field) (Collection, error)
	Collection(ctx context.Context, name string) (Collection, error)
	Collections(ctx context.Context) ([]Collection, error)

	// Put creates (BaseVersion 0) or updates (BaseVersion = the version it
	// read) one document; a stale base is tidemark.ErrConflict.
	Put(ctx context.Context, collection string, p Put) (Document, error)
	// Import creates every document next yields, in one transaction: all
	// or nothing. next returns ok=false at the end.
	Import(ctx context.Context, collection string, next func() (p Put, ok bool, err error)) (int, error)
	Document(ctx context.Context, collection, id string) (Document, error)
	// Documents lists documents in ID order after the ID after.
	Documents(ctx context.Context, collection, after string, limit int) ([]Document, error)
	Versions(ctx context.Context, collection, id string) ([]Version, error)
	// Delete removes the document, which must still be at version base,
	// with its version snapshots, and records a (filled in with the
	// document's last version and fields) in the same transaction. A
	// document that moved on is tidemark.ErrConflict, and so is every
	// delete while a migration run of the collection is unfinished. On an
	// error nothing is deleted and the action returned is zero.
	Delete(ctx context.Context, collection, id string, base int64, a Action) (Action, error)
	// Record adds an action to the audit.
	Record(ctx context.Context, a Action) (Action, error)
	// Actions lists the audit, newest first.
	Actions(ctx context.Context, f ActionFilter) ([]Action, error)

	// StartRun records a migration run of field to type to, refusing a
	// change CheckChange refuses. It does not claim the run.
	StartRun(ctx context.Context, collection, field string, to FieldType, batch int) (Run, error)
	// ClaimRun admits one worker to a running or aborting run (a failed
	// run is resumed: it becomes running). A live lease of another holder
	// is tidemark.ErrClaimHeld; the same holder re-enters.
	ClaimRun(ctx context.Context, runID, holder string, leaseTTL time.Duration) (RunClaim, error)
	// AbortRun turns a running or failed run into an aborting one and
	// claims it.
	AbortRun(ctx context.Context, runID, holder string, leaseTTL time.Duration) (RunClaim, error)
	// Step does one batch of a claimed run: converts (running) or restores
	// (aborting) up to the run's batch size, advancing the cursor in the
	// same transaction, and extends the lease. A stale claim is
	// tidemark.ErrStaleClaim and changes nothing. It returns the run as the
	// batch left it; a conversion failure leaves it failed.
	Step(ctx context.Context, c RunClaim, leaseTTL time.Duration) (Run, error)
	// ReleaseRun gives the claim up (an interrupted worker), leaving the
	// run where it is for the next.
	ReleaseRun(ctx context.Context, c RunClaim) error
	Run(ctx context.Context, id string) (Run, error)
	// Runs lists runs, newest first; pending only lists the runs a worker
	// could claim now (running or aborting, unclaimed or lease expired).
	Runs(ctx context.Context, f RunFilter) ([]Run, error)
}

// Put is one document write. Set values are validated against the field's
// declared type; Unset removes fields.
type Put struct {
	ID          string   `json:"id,omitempty"`
	BaseVersion int64    `json:"base_version"`
	Set         Fields   `json:"set,omitempty"`
	Unset       []string `json:"unset,omitempty"`
	// Actor, when set, is recorded in the audit with the write, in its
	// transaction.
	Actor string `json:"-"`
}

// RunStatus is where a migration run is in its life.
type RunStatus string

const (
	RunRunning  RunStatus = "running"  // converting; pending for a worker
	RunFailed   RunStatus = "failed"   // a value could not convert; waits for resume or abort
	RunDone     RunStatus = "done"     // every document converted; the type flipped
	RunAborting RunStatus = "aborting" // restoring converted documents
	RunAborted  RunStatus = "aborted"  // every converted document restored; the type unchanged
)

// Open reports whether the run still holds its field (running, failed or
// aborting).
func (s RunStatus) Open() bool { return s == RunRunning || s == RunFailed || s == RunAborting }

// Run is a field migration. Every field is in its JSON, empty or not
// (null for a time that has not happened), as docs/documents.md lists them.
type Run struct {
	ID         string    `json:"id"`
	Collection string    `json:"collection"`
	Field      string    `json:"field"`
	From       FieldType `json:"from"`
	To         FieldType `json:"to"`
	Status     RunStatus `json:"status"`
	BatchSize  int       `json:"batch_size"`
	// Cursor is the ID of the last document walked; every document up to
	// it is converted.
	Cursor string `json:"cursor"`
	// UndoCursor is the ID of the last document an abort restored.
	UndoCursor string `json:"undo_cursor"`
	// Total is how many documents the collection held when the run began.
	Total     int64 `json:"total"`
	Walked    int64 `json:"walked"`
	Converted int64 `json:"converted"`
	Restored  int64 `json:"restored"`
	Batches   int64 `json:"batches"`
	// Error, FailedDocumentID and FailedValue say why a failed run failed.
	Error            string     `json:"error"`
	FailedDocumentID string     `json:"failed_document_id"`
	FailedValue      string     `json:"failed_value"`
	Holder           string     `json:"holder"`
	LeaseExpiresAt   *time.Time `json:"lease_expires_at"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	FinishedAt       *time.Time `json:"finished_at"`
}

// Held says whether a worker holds the run at now: it has a holder whose
// lease has not run out. Another worker's claim is refused until then.
func (r Run) Held(now time.Time) bool {
	return r.Holder != "" && r.LeaseExpiresAt != nil && r.LeaseExpiresAt.After(now)
}

// RunClaim is a worker's right to step a run; every step presents Token.
type RunClaim struct {
	RunID          string    `json:"run_id"`
	Token          string    `json:"token"`
	Holder         string    `json:"holder"`
	LeaseExpiresAt time.Time `json:"lease_expires_at"`
}

// RunFilter narrows a run listing; Limit 0 means 100. BeforeID pages a
// listing that is not Pending (newest first): only runs strictly older
// than (BeforeCreatedAt, BeforeID).
type RunFilter struct {
	Collection      string
	Pending         bool
	Limit           int
	BeforeCreatedAt time.Time
	BeforeID        string
}

// CollectionDetail is a collection with its unfinished migration runs.
type CollectionDetail struct {
	Collection
	Migrations []Run `json:"migrations"`
}

// Progress is how far the run is, for a progress display: documents
// walked of the total, or while aborting documents restored of those
// converted; desc names the change.
func (r Run) Progress() (done, total int64, desc string) {
	desc = fmt.Sprintf("%s.%s %s→%s", r.Collection, r.Field, r.From, r.To)
	if r.Status == RunAborting || r.Status == RunAborted {
		return r.Restored, r.Converted, "aborting " + desc
	}
	return r.Walked, r.Total, desc
}

// Describe says in one sentence where the run is.
func (r Run) Describe() string {
	switch r.Status {
	case RunDone:
		return fmt.Sprintf("migration %s done: %s.%s is now %s (%d documents walked, %d converted, %d batches)",
			r.ID, r.Collection, r.Field, r.To, r.Walked, r.Converted, r.Batches)
	case RunAborted:
		return fmt.Sprintf("migration %s aborted: %s.%s stays %s (%d documents restored)", r.ID, r.Collection, r.Field, r.From, r.Restored)
	case RunFailed:
		return fmt.Sprintf("migration %s failed at document %s (value %s): %s", r.ID, r.FailedDocumentID, r.FailedValue, r.Error)
	}
	return fmt.Sprintf("migration %s is %s: %s.%s %s→%s, %d of %d walked", r.ID, r.Status, r.Collection, r.Field, r.From, r.To, r.Walked, r.Total)
}
