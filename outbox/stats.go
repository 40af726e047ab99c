package outbox

// GapBucketsMS are the upper bounds (milliseconds) of the achieved-gap
// histogram in LaneStats: from a tenth of a second to an hour, wide enough
// for a chat lane paced at one write a second and a forge paced at one a
// minute.
var GapBucketsMS = []int64{100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000}

// LaneStats is what the database says about one lane, for metrics.
type LaneStats struct {
	Lane     string `json:"lane"`
	Provider string `json:"provider"`
	// MinGapMS is the lane's configured minimum gap now.
	MinGapMS int64 `json:"min_gap_ms"`
	// Intents counts the lane's intents by state.
	Intents map[State]int64 `json:"intents"`
	// Sends counts attempts that reached the provider (the journal
	// recorded the send), whatever their answer.
	Sends int64 `json:"sends"`
	// Duplicates counts attempts whose counter check found more than one
	// write (CountDuplicate).
	Duplicates int64 `json:"duplicates"`
	// Gaps is the histogram of achieved gaps between sends.
	Gaps GapHistogram `json:"gaps"`
	// Failing is whether the lane's latest delivery step failed (Lane.Failing).
	Failing bool `json:"failing"`
	// FailedSteps counts the lane's delivery steps that failed, over its
	// life: it only grows.
	FailedSteps int64 `json:"failed_steps"`
}

// GapHistogram counts achieved gaps: Buckets[i] is how many were at most
// GapBucketsMS[i] (cumulative, as Prometheus wants them).
type GapHistogram struct {
	Count int64 `json:"count"`
	SumMS int64 `json:"sum_ms"`
	// BelowThreshold counts gaps shorter than the minimum gap in force
	// when they were made.
	BelowThreshold int64   `json:"below_threshold"`
	Buckets        []int64 `json:"buckets"`
}

// States are every intent state, in the order the console shows them.
var States = []State{StatePending, StateSending, StateLanded, StateUnresolved, StateUnexecutable, StateRetired, StateCollision}
