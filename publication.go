package tidemark

import (
	"context"
	"database/sql"
)

// Publication is a page being marked published. Hooks of this shape run
// inside the transaction that marks it, so whatever they write (the
// outbox's intents, for one) commits with the mark or not at all.
type Publication struct {
	PageID     string `json:"page_id"`
	EventID    string `json:"event_id"`
	SourceID   string `json:"source_id"`
	SummaryID  string `json:"summary_id"`
	Generation int64  `json:"generation"`
	Title      string `json:"title"`
	Summary    string `json:"summary"`
	// PageURL is where the published page can be read, if known.
	PageURL string `json:"page_url,omitempty"`
}

// PublishHook runs inside the mark-published transaction. An error rolls
// the mark back.
type PublishHook func(ctx context.Context, tx *sql.Tx, p Publication) error
