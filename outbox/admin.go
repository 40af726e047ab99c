package outbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
)

// IntentFilter selects intents to list, by lane and rank.
type IntentFilter struct {
	Lane  string // "": every lane
	State State  // "": every state
	Limit int    // at most this many; see MaxIntents
	// AfterLane and AfterRank page through a listing (ordered by lane, then
	// rank): only intents after that one. AfterLane "" starts at the first.
	AfterLane string
	AfterRank int64
}

// DefaultIntents and MaxIntents bound a listing: a limit that is not
// positive, or above MaxIntents, lists DefaultIntents.
const (
	DefaultIntents = 1000
	MaxIntents     = 100_000
)

// Bounded returns the filter's limit, within bounds.
func (f IntentFilter) Bounded() int {
	if f.Limit <= 0 || f.Limit > MaxIntents {
		return DefaultIntents
	}
	return f.Limit
}

// LaneReader reads a lane by name (tidemark.ErrNotFound naming it when
// there is none).
type LaneReader interface {
	Lane(ctx context.Context, name string) (Lane, error)
}

// CheckIntentFilter checks an intent listing's filter before it is listed:
// a state must be one (tidemark.ErrInvalid), and a lane it names must
// exist (tidemark.ErrNotFound naming it), because an empty listing would
// say the lane has no intents where there is no lane to look at. No
// intent outlives its lane (each refers to its lane's row, and removing a
// lane removes its intents), so no listing by a lane that does not exist
// could find any. Every intent listing (the CLI and the API) checks its
// filter here.
func CheckIntentFilter(ctx context.Context, lanes LaneReader, f IntentFilter) error {
	if _, err := ParseState(string(f.State)); err != nil {
		return err
	}
	if f.Lane == "" {
		return nil
	}
	_, err := lanes.Lane(ctx, f.Lane)
	return err
}

// Channel delivers a source's published pages to a target on a lane.
type Channel struct {
	ID       string `json:"id"`
	SourceID string `json:"source_id"`
	Source   string `json:"source"`
	Lane     string `json:"lane"`
	Target   string `json:"target"`
	Parent   string `json:"parent"`
	// Template is the channel's message template ("": the provider
	// kind's default; see Preview).
	Template  string    `json:"template"`
	CreatedAt time.Time `json:"created_at"`
	// Note says, when the lane's listing does not read this target back
	// (provider.Covering), what that means for a write in doubt and how to
	// have it read; "" otherwise. It is not stored: it is worked out from
	// the lane's settings when a channel is added or listed.
	Note string `json:"note"`
}

// Action is an operator's (or the policy's) retire or revive, as audited.
type Action struct {
	IntentID string    `json:"intent_id"`
	Action   string    `json:"action"`
	Actor    string    `json:"actor"`
	Reason   string    `json:"reason"`
	From     string    `json:"from_state"`
	To       string    `json:"to_state"`
	At       time.Time `json:"at"`
}

// GapReport is what the pacing gate achieved on a lane.
type GapReport struct {
	Lane string `json:"lane"`
	// Count is the number of gaps recorded (sends after the first).
	Count int `json:"count"`
	// MinMS and MedianMS are the smallest and median achieved gaps.
	MinMS    int64 `json:"min_ms"`
	MedianMS int64 `json:"median_ms"`
	// ThresholdMS is the lane's configured minimum gap; BelowThreshold
	// counts gaps shorter than the threshold in force when they were made.
	ThresholdMS    int64 `json:"threshold_ms"`
	BelowThreshold int   `json:"below_threshold"`
	OK             bool  `json:"ok"`
}

// Gap is one achieved gap between two sends on a lane, with the lane's
// minimum gap when it was made.
type Gap struct {
	MS          int64     `json:"gap_ms"`
	ThresholdMS int64     `json:"threshold_ms"`
	At          time.Time `json:"at"` // when the later send was made
}

// ReportGaps sums up a lane's achieved gaps; thresholdMS is the lane's
// minimum gap now.
func ReportGaps(lane string, thresholdMS int64, gaps []Gap) GapReport {
	r := GapReport{Lane: lane, ThresholdMS: thresholdMS, Count: len(gaps)}
	ms := make([]int64, len(gaps))
	for i, g := range gaps {
		ms[i] = g.MS
		if g.MS < g.ThresholdMS {
			r.BelowThreshold++
		}
	}
	slices.Sort(ms)
	if n := len(ms); n > 0 {
		r.MinMS = ms[0]
		r.MedianMS = ms[n/2]
		if n%2 == 0 {
			r.MedianMS = (ms[n/2-1] + ms[n/2]) / 2
		}
	}
	r.OK = r.BelowThreshold == 0
	return r
}

// Operation is a move of an intent's state made outside delivery: a
// retire (by an operator, or by the retirement policy) or a revive.
type Operation string

const (
	OpRetire Operation = "retire"
	OpRevive Operation = "revive"
)

// Move is a retire or revive asked of one intent, with what deciding it
// needs to know. Decide is the retire/revive state machine; a store reads
// the fields, decides, and applies the Transition conditionally on the
// state it read.
type Move struct {
	Intent string // the intent's id, for errors
	Op     Operation
	// ByPolicy: the retirement policy retires, and only what stays
	// unresolved or unexecutable; an operator may also retire a pending
	// intent or a collision.
	ByPolicy bool
	// State is the intent's state; RetiredFrom the state a retired intent
	// was retired from.
	State       State
	RetiredFrom State
	// Twin is a live intent (neither retired nor in collision) with the
	// intent's identity (lane, target, parent, body), "" if none. Only a
	// revive of a collision asks for it (AsksTwin).
	Twin string
}

// Transition is a decided move.
type Transition struct {
	From State
	To   State
	// RetiredFrom is what the intent records as retired from: From when
	// To is StateRetired, else "".
	RetiredFrom State
}

// Applies lists the states the move may leave, in the order errors name
// them.
func (m Move) Applies() []State {
	switch {
	case m.Op == OpRetire && m.ByPolicy:
		return []State{StateUnresolved, StateUnexecutable}
	case m.Op == OpRetire:
		return []State{StatePending, StateUnresolved, StateUnexecutable, StateCollision}
	case m.Op == OpRevive:
		return []State{StateRetired, StateUnexecutable, StateCollision}
	}
	return nil
}

// origin is the state a revive returns from: the one a retired intent was
// retired from, else the state it is in.
func (m Move) origin() State {
	if m.Op == OpRevive && m.State == StateRetired {
		return m.RetiredFrom
	}
	return m.State
}

// AsksTwin reports whether deciding needs Twin: the move revives an intent
// that was in collision.
func (m Move) AsksTwin() bool {
	return m.Op == OpRevive && slices.Contains(m.Applies(), m.State) && m.origin() == StateCollision
}

// Decide is the retire/revive state machine. A retire retires. A revive
// returns an intent retired while unresolved to unresolved, so a fresh
// answer decides before it is ever sent again; one from collision to
// pending only when it has no live twin (a provider could not tell the
// two writes apart): a collision revived while its twin lives is refused,
// and one retired from collision goes back to collision; the rest go back
// to pending. A move from a state it does not apply to is ErrConflict.
func (m Move) Decide() (Transition, error) {
	from := m.Applies()
	if from == nil {
		return Transition{}, tidemark.Invalidf("operation", string(m.Op), "want retire or revive")
	}
	if !slices.Contains(from, m.State) {
		names := make([]string, len(from))
		for i, s := range from {
			names[i] = string(s)
		}
		return Transition{}, fmt.Errorf("intent %s is %s; %s applies to %s: %w", m.Intent, m.State, m.Op, strings.Join(names, " or "), tidemark.ErrConflict)
	}
	t := Transition{From: m.State}
	switch origin := m.origin(); {
	case m.Op == OpRetire:
		t.To = StateRetired
	case origin == StateCollision && m.Twin == "":
		t.To = StatePending
	case origin == StateCollision && m.State == StateCollision:
		return Transition{}, fmt.Errorf("intent %s shares its target, parent and body with live intent %s; retire %s first: %w",
			m.Intent, m.Twin, m.Twin, tidemark.ErrConflict)
	case origin == StateCollision:
		t.To = StateCollision
	case origin == StateUnresolved:
		t.To = StateUnresolved
	default:
		t.To = StatePending
	}
	if t.To == StateRetired {
		t.RetiredFrom = m.State
	}
	return t, nil
}
