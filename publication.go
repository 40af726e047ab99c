package tidemark

// Publication is a page being marked published. What other pipelines
// write with it (the outbox's intents, for one) commits in the transaction
// that marks it, or not at all.
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
