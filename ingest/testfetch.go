package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/tidemark/tidemark"
)

// TestReport is what one fetch of a source would become, nothing stored:
// `source test`, the console's preview before adding a source, and
// POST /api/sources/test.
type TestReport struct {
	Kind     string            `json:"kind"`
	Name     string            `json:"name"`
	Location string            `json:"location"`
	Config   map[string]string `json:"config"`
	// Outcome is what a first run of a new source would record: items
	// (Items would become events), empty, unreachable, invalid or error.
	Outcome           tidemark.Outcome `json:"outcome"`
	Error             string           `json:"error"`
	RetryAfterSeconds float64          `json:"retry_after_seconds"`
	NotBeforeSeconds  float64          `json:"not_before_seconds"`
	Items             []TestItem       `json:"items"`
	Cursor            string           `json:"cursor"`
	// Notes are what the fetch noticed but did not refuse (a json ignore
	// path that matched nothing in any item).
	Notes []string `json:"notes"`
}

// TestItem is one item a test fetch admitted.
type TestItem struct {
	Key            string     `json:"key"`
	Title          string     `json:"title"`
	URL            string     `json:"url"`
	OccurredAt     *time.Time `json:"occurred_at"`
	EvidenceSHA256 string     `json:"evidence_sha256"`
	EvidenceBytes  int        `json:"evidence_bytes"`
	// Evidence is "" unless the evidence was asked for.
	Evidence string `json:"evidence"`
}

// TestRequest is a location to fetch once as a new source would be.
type TestRequest struct {
	Source NewSource
	// Cursor fetches as if the source's cursor were this ("" a new source).
	Cursor string
	// Evidence includes each item's evidence in the report.
	Evidence bool
}

// CursorChecker is implemented by fetchers that can tell, without
// fetching, whether a cursor is one they could read. CheckCursor returns
// an *tidemark.InvalidError for the input "cursor" that says what the
// kind's cursor looks like.
type CursorChecker interface {
	CheckCursor(cursor string) error
}

// TestFetch fetches src once from cursor, as a run would, and reports what
// the run would record, storing nothing. A cursor the fetcher cannot read
// (CursorChecker) is the caller's bad input, an error matching
// tidemark.ErrInvalid, and nothing is fetched; otherwise only a cancelled
// ctx is an error: a failed fetch is the report's outcome.
func TestFetch(ctx context.Context, f tidemark.Fetcher, src tidemark.Source, cursor string, withEvidence bool) (TestReport, error) {
	rep := TestReport{Kind: src.Kind, Name: src.Name, Location: src.ShownLocation(), Config: src.Config, Items: []TestItem{}, Cursor: cursor, Notes: []string{}}
	if rep.Config == nil {
		rep.Config = map[string]string{}
	}
	if c, ok := f.(CursorChecker); ok && cursor != "" {
		if err := c.CheckCursor(cursor); err != nil {
			return rep, err
		}
	}
	res, err := f.Fetch(ctx, src, cursor)
	if err != nil && ctx.Err() != nil {
		return rep, ctx.Err()
	}
	var ra time.Duration
	rep.Outcome, rep.Error, ra = FetchOutcome(res, err)
	rep.RetryAfterSeconds = ra.Seconds()
	if err != nil {
		return rep, nil
	}
	rep.Cursor, rep.NotBeforeSeconds = res.Cursor, res.NotBefore.Seconds()
	rep.Notes = append(rep.Notes, res.Notes...)
	for _, it := range res.Items {
		ti := TestItem{Key: it.Key, Title: it.Title, URL: it.URL, EvidenceSHA256: it.EvidenceHash(), EvidenceBytes: len(it.Evidence)}
		if !it.OccurredAt.IsZero() {
			t := it.OccurredAt
			ti.OccurredAt = &t
		}
		if withEvidence {
			ti.Evidence = string(it.Evidence)
		}
		rep.Items = append(rep.Items, ti)
	}
	return rep, nil
}

// FetchOutcome is what a fetch that answered res or err makes of a run:
// for a failure its outcome, the reason and how long the upstream asked to
// wait (tidemark.Classify); a fetch that declared more results than it
// admitted is invalid, since a later cursor would hide the missing ones;
// anything else is items or empty.
func FetchOutcome(res tidemark.FetchResult, err error) (tidemark.Outcome, string, time.Duration) {
	switch {
	case err != nil:
		return tidemark.Classify(err)
	case res.Declared > len(res.Items):
		return tidemark.OutcomeInvalid, fmt.Sprintf("upstream declared %d results, %d were admitted; the cursor stays so none are hidden",
			res.Declared, len(res.Items)), 0
	case len(res.Items) > 0:
		return tidemark.OutcomeItems, "", 0
	}
	return tidemark.OutcomeEmpty, "", 0
}

// Err is the report's outcome as an error, for exit codes and HTTP
// statuses: nil for items and empty, tidemark.ErrUnavailable for
// unreachable, tidemark.ErrInvalid for invalid.
func (r TestReport) Err() error {
	switch r.Outcome {
	case tidemark.OutcomeItems, tidemark.OutcomeEmpty:
		return nil
	case tidemark.OutcomeUnreachable:
		return &OutcomeError{Outcome: r.Outcome, Reason: r.Error, kind: tidemark.ErrUnavailable}
	case tidemark.OutcomeInvalid:
		return &OutcomeError{Outcome: r.Outcome, Reason: r.Error, kind: tidemark.ErrInvalid}
	}
	return &OutcomeError{Outcome: r.Outcome, Reason: r.Error}
}

// OutcomeError is a test fetch that failed; it matches the error kind its
// outcome maps to.
type OutcomeError struct {
	Outcome tidemark.Outcome
	Reason  string
	kind    error
}

// Error names the outcome only: the reason is in the report, shown beside.
func (e *OutcomeError) Error() string        { return "source test: outcome " + string(e.Outcome) }
func (e *OutcomeError) Is(target error) bool { return e.kind != nil && target == e.kind }
