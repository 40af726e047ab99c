package publish

// Stats is what the database says about publication, read at once for
// metrics: every process of a deployment sees the same numbers.
type Stats struct {
	// Pages is every page (one per event that was ever summarized).
	Pages int64 `json:"pages"`
	// Published pages show a published summary.
	Published int64 `json:"published"`
	// Behind pages have a current summary of their event's evidence that
	// is not the one they show: waiting to be published or repaired.
	Behind int64 `json:"behind"`
	// Withdrawing pages are published, but their event has no current
	// summary any more (it was rejected): the next sweep withdraws them.
	Withdrawing int64 `json:"withdrawing"`
	// Missing pages are published, but the books record their objects
	// missing from the store (a sweep could not republish them, or the
	// wiki was rebound to a store without them): no listing links to them,
	// and the next sweep republishes them.
	Missing int64 `json:"missing"`
	// Summaries by state: current, rejected, superseded.
	Summaries map[string]int64 `json:"summaries"`
}

// Summary states of Stats.Summaries.
var SummaryStates = []string{"current", "rejected", "superseded"}
