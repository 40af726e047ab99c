package outbox

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
)

// JoinKey names the identity an intent and an own write are matched on.
type JoinKey string

// The join keys, strongest first.
const (
	JoinTargetParentBody JoinKey = "target+parent+body_sha256"
	JoinTargetParent     JoinKey = "target+parent"
	JoinTarget           JoinKey = "target"
)

// PlanIntent is an intent as the planner sees it.
type PlanIntent struct {
	ID     string
	Rank   int64
	Target string
	// Parent is what the write answers; HasParent says the record carried
	// the field at all (an absent parent is a top-level write).
	Parent    string
	HasParent bool
	// BodySHA256 is empty when the record carried no body.
	BodySHA256 string

	// Live reconciliation only. KnownLanded is set for an intent the journal
	// already recorded as landed (verified when it was sent) or a fresh
	// probe found; KnownRemoteID is its remote id, when known.
	KnownLanded   bool
	KnownRemoteID string
	// AttemptStartedAt is the start of an attempt whose result is unknown
	// (the process died, or the call's answer was lost).
	AttemptStartedAt *time.Time
	// AttemptUntil is that attempt's deadline: until then its write could
	// still land, so only a listing assembled after it shows that the
	// write did not (nil: the attempt's start). It counts only with
	// AttemptStartedAt: an intent no longer in doubt has no deadline.
	AttemptUntil *time.Time
}

// OwnWrite is one of our own writes as the provider listed it.
type OwnWrite struct {
	RemoteID   string    `json:"remote_id"`
	CreatedAt  time.Time `json:"created_at"`
	Target     string    `json:"target"`
	Parent     string    `json:"parent"`
	HasParent  bool      `json:"has_parent"`
	BodySHA256 string    `json:"body_sha256"`
}

// PlanInput is everything a plan is made from.
type PlanInput struct {
	Intents   []PlanIntent
	OwnWrites []OwnWrite
	// Unexecutable names intents whose targets cannot accept a write.
	Unexecutable []string
	// ListedAt is when the listing of own writes was assembled (its
	// snapshot_at, see Fresh). nil means the listing is authoritative, as
	// for exported data. An attempt that started at or after ListedAt and is
	// not in the listing is unresolved: the listing is too old to say.
	ListedAt *time.Time
}

// Mark is the highest-ranked intent that landed.
type Mark struct {
	Intent    string     `json:"intent"`
	RemoteID  string     `json:"remote_id"`
	CreatedAt *time.Time `json:"created_at"`
}

// Accounting is the identity every plan must satisfy:
// landed + replay + unexecutable + unresolved = total.
type Accounting struct {
	Total        int  `json:"total"`
	Landed       int  `json:"landed"`
	Replay       int  `json:"replay"`
	Unexecutable int  `json:"unexecutable"`
	Unresolved   int  `json:"unresolved"`
	Balanced     bool `json:"balanced"`
}

// Plan is a recovery plan. Its JSON form is the fixed contract of
// `tidemark outbox plan --json`; every array holds intent ids in rank order
// (unmatched_own_writes holds remote ids in listing order).
type Plan struct {
	Join JoinKey `json:"join"`
	Mark *Mark   `json:"mark"`
	// Landed: intents one of our own writes (or the journal) shows landed.
	Landed []string `json:"landed"`
	// Untouched: ranked above the mark and not landed; with a serialized
	// lane they were never attempted, but for UntouchedAttempted.
	Untouched []string `json:"untouched"`
	// UntouchedAttempted: the untouched intents whose attempt was in doubt
	// and that a listing assembled after its deadline does not show: they
	// were attempted, and did not land.
	UntouchedAttempted []string `json:"-"`
	// Holes: ranked below the mark and not landed.
	Holes []string `json:"holes"`
	// Replay: what the recovery sends, in rank order: the holes and the
	// untouched intents.
	Replay []string `json:"replay"`
	// Unexecutable: intents whose targets cannot accept a write, bucketed
	// (reversibly) instead of queued.
	Unexecutable []string `json:"unexecutable"`
	// ReplayAlreadyLanded: intents both replayed and landed. Always empty in
	// a plan that is not refused.
	ReplayAlreadyLanded []string `json:"replay_already_landed"`
	// UnmatchedOwnWrites: remote ids of own writes no intent matches.
	UnmatchedOwnWrites []string   `json:"unmatched_own_writes"`
	Accounting         Accounting `json:"accounting"`

	// Unresolved: attempts in doubt that no fresh answer decided (live
	// only): the listing is too old or cannot show them, or the lane has
	// nothing that reads writes back (UnresolvedWhy says so).
	Unresolved []string `json:"-"`
	// UnresolvedWhy, when set, is why every unresolved attempt stays so
	// (a lane that is at most once); the report says it.
	UnresolvedWhy string `json:"-"`
	// DuplicateOwnWrites: remote ids of own writes matching an intent
	// another own write already matched: duplicates to go and find.
	DuplicateOwnWrites []string `json:"-"`
	// LandedAs maps each landed intent to the own write that shows it.
	LandedAs map[string]OwnWrite `json:"-"`
}

// ErrUnbalanced is returned with a plan whose accounting does not add up;
// such a plan is never executed.
var ErrUnbalanced = errors.New("outbox: plan does not balance")

// DuplicateKeyError is a join key that more than one intent carries: the
// planner cannot tell which of them an own write is.
type DuplicateKeyError struct {
	Join    JoinKey
	Key     string // the duplicate key, readable
	Intents []string
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("join key %s is not unique among the intents: %s is carried by intents %s",
		e.Join, e.Key, strings.Join(e.Intents, ", "))
}

// Is makes a duplicate key an invalid input.
func (e *DuplicateKeyError) Is(target error) bool { return target == tidemark.ErrInvalid }

// ChooseJoin returns the strongest identity both sides carry. A body hash
// is carried by a side when every record has one. A parent is comparable
// when both sides carry the field, or neither does (every write then is
// top-level on both sides). An empty listing carries whatever the intents
// carry.
func ChooseJoin(intents []PlanIntent, own []OwnWrite) JoinKey {
	bodyBoth := true
	intentParent, ownParent := false, false
	for _, in := range intents {
		if in.BodySHA256 == "" {
			bodyBoth = false
		}
		intentParent = intentParent || in.HasParent
	}
	for _, w := range own {
		if w.BodySHA256 == "" {
			bodyBoth = false
		}
		ownParent = ownParent || w.HasParent
	}
	if len(own) == 0 {
		// Nothing listed: nothing contradicts what the intents carry.
		ownParent = intentParent
	}
	parentBoth := intentParent == ownParent
	switch {
	case parentBoth && bodyBoth:
		return JoinTargetParentBody
	case parentBoth:
		return JoinTargetParent
	default:
		return JoinTarget
	}
}

// joinKeyOf is the join key of one record: the fields the join uses, the
// others left empty. A struct key spares building a string per record.
type joinKeyOf struct{ target, parent, body string }

func joinKey(j JoinKey, target, parent, body string) joinKeyOf {
	switch j {
	case JoinTargetParentBody:
		return joinKeyOf{target, parent, body}
	case JoinTargetParent:
		return joinKeyOf{target: target, parent: parent}
	default:
		return joinKeyOf{target: target}
	}
}

func readableKey(j JoinKey, in PlanIntent) string {
	switch j {
	case JoinTargetParentBody:
		return fmt.Sprintf("target=%q parent=%q body_sha256=%s", in.Target, in.Parent, in.BodySHA256)
	case JoinTargetParent:
		return fmt.Sprintf("target=%q parent=%q", in.Target, in.Parent)
	default:
		return fmt.Sprintf("target=%q", in.Target)
	}
}

// MakePlan plans a recovery. It is a pure function of its input. It
// refuses (with an error and no plan) input it cannot plan from: duplicate
// intent ids or ranks, unknown unexecutable ids, a join key that is not
// unique among the intents. It returns the plan with ErrUnbalanced when the
// accounting does not add up; such a plan must not be executed.
func MakePlan(in PlanInput) (*Plan, error) {
	intents, byID, err := rankIntents(in.Intents)
	if err != nil {
		return nil, err
	}
	unexec, err := unexecutableSet(in.Unexecutable, byID)
	if err != nil {
		return nil, err
	}
	join := ChooseJoin(intents, in.OwnWrites)
	keyed, err := keyIntents(join, intents)
	if err != nil {
		return nil, err
	}
	p := &Plan{
		Join: join, Landed: []string{}, Untouched: []string{}, UntouchedAttempted: []string{}, Holes: []string{}, Replay: []string{},
		Unexecutable: []string{}, ReplayAlreadyLanded: []string{}, UnmatchedOwnWrites: []string{},
		LandedAs: map[string]OwnWrite{},
	}
	landed := matchOwnWrites(p, in, intents, keyed)
	markAt := placeMark(p, intents, landed)
	bucketIntents(p, in.ListedAt, intents, byID, landed, unexec, markAt)
	p.Accounting = account(p, len(intents))
	if !p.Accounting.Balanced {
		return p, fmt.Errorf("%w: %+v, replay_already_landed %v", ErrUnbalanced, p.Accounting, p.ReplayAlreadyLanded)
	}
	return p, nil
}

// rankIntents decides the order the plan reasons in: the intents sorted by
// rank, each id and each rank carried by one intent only. It returns each
// id's index in that order.
func rankIntents(in []PlanIntent) ([]PlanIntent, map[string]int, error) {
	intents := append([]PlanIntent(nil), in...)
	sort.SliceStable(intents, func(i, j int) bool { return intents[i].Rank < intents[j].Rank })
	byID := make(map[string]int, len(intents))
	for i, it := range intents {
		if it.ID == "" {
			return nil, nil, tidemark.Invalidf("intent id", "", "an intent (rank %d) has no id", it.Rank)
		}
		if _, dup := byID[it.ID]; dup {
			return nil, nil, tidemark.Invalidf("intent id", it.ID, "appears more than once")
		}
		if i > 0 && intents[i-1].Rank == it.Rank {
			return nil, nil, tidemark.Invalidf("rank", fmt.Sprint(it.Rank), "intents %s and %s share it; ranks order the intents and must be unique", intents[i-1].ID, it.ID)
		}
		byID[it.ID] = i
	}
	return intents, byID, nil
}

// unexecutableSet decides which intents are bucketed as unexecutable:
// those named, each of which must be one of the intents.
func unexecutableSet(ids []string, byID map[string]int) (map[string]bool, error) {
	unexec := make(map[string]bool, len(ids))
	for _, id := range ids {
		if _, ok := byID[id]; !ok {
			return nil, tidemark.Invalidf("unexecutable id", id, "no intent has this id")
		}
		unexec[id] = true
	}
	return unexec, nil
}

// keyIntents decides whether the join key tells the intents apart: each
// key maps to the indexes of the intents carrying it. A key two intents
// share refuses the plan (an own write matching it could be either),
// unless every intent carrying it is known to have landed: those decide
// nothing, and their own writes are told apart by the remote ids the
// journal recorded (matchOwnWrites).
func keyIntents(join JoinKey, intents []PlanIntent) (map[joinKeyOf][]int, error) {
	keyed := make(map[joinKeyOf][]int, len(intents))
	for i, it := range intents {
		k := joinKey(join, it.Target, it.Parent, it.BodySHA256)
		if js := keyed[k]; len(js) > 0 && (!it.KnownLanded || !intents[js[0]].KnownLanded) {
			return nil, &DuplicateKeyError{Join: join, Key: readableKey(join, it), Intents: []string{intents[js[0]].ID, it.ID}}
		}
		keyed[k] = append(keyed[k], i)
	}
	return keyed, nil
}

// listingTooOld says whether a listing assembled at listedAt can say
// nothing about it: freshness before existence, a listing assembled before
// an attempt began tells neither that it landed nor that it did not.
func listingTooOld(listedAt *time.Time, it PlanIntent) bool {
	return !it.KnownLanded && it.AttemptStartedAt != nil && listedAt != nil && !listedAt.After(*it.AttemptStartedAt)
}

// absenceTooEarly says whether a listing assembled at listedAt that does
// not show an attempt's write cannot say it did not land: it was assembled
// before the attempt's deadline, while the write could still be landing
// (a remote may take the whole bound to process it, or a dead process's
// request may still be on its way).
func absenceTooEarly(listedAt *time.Time, it PlanIntent) bool {
	if listingTooOld(listedAt, it) {
		return true
	}
	return !it.KnownLanded && it.AttemptStartedAt != nil && it.AttemptUntil != nil && listedAt != nil && !listedAt.After(*it.AttemptUntil)
}

// matchOwnWrites decides which intents landed: those an own write matches
// (when the listing is fresh enough to say), the earliest write kept as the
// one that landed it and later ones recorded as duplicates, and those
// already known to have landed. Own writes no intent matches are recorded
// as unmatched.
func matchOwnWrites(p *Plan, in PlanInput, intents []PlanIntent, keyed map[joinKeyOf][]int) []bool {
	landed := make([]bool, len(intents))
	for _, w := range in.OwnWrites {
		i, ok := keyedIntent(keyed[joinKey(p.Join, w.Target, w.Parent, w.BodySHA256)], intents, w)
		if !ok {
			p.UnmatchedOwnWrites = append(p.UnmatchedOwnWrites, w.RemoteID)
			continue
		}
		if listingTooOld(in.ListedAt, intents[i]) {
			continue
		}
		id := intents[i].ID
		if prev, seen := p.LandedAs[id]; seen {
			// Keep the earliest write as the one that landed the intent.
			if w.CreatedAt.Before(prev.CreatedAt) {
				p.LandedAs[id] = w
				w = prev
			}
			p.DuplicateOwnWrites = append(p.DuplicateOwnWrites, w.RemoteID)
			continue
		}
		p.LandedAs[id] = w
		landed[i] = true
	}
	for i, it := range intents {
		if !landed[i] && it.KnownLanded {
			landed[i] = true
			p.LandedAs[it.ID] = OwnWrite{RemoteID: it.KnownRemoteID, Target: it.Target, Parent: it.Parent, BodySHA256: it.BodySHA256}
		}
	}
	return landed
}

// keyedIntent is the intent an own write with these keyed intents is: the
// one intent of its key, or, of intents known to have landed that share it
// (keyIntents), the one whose journal recorded this write's remote id, else
// the first of them.
func keyedIntent(is []int, intents []PlanIntent, w OwnWrite) (int, bool) {
	if len(is) == 0 {
		return 0, false
	}
	for _, i := range is {
		if intents[i].KnownRemoteID != "" && intents[i].KnownRemoteID == w.RemoteID {
			return i, true
		}
	}
	return is[0], true
}

// placeMark decides the mark: the highest-ranked landed intent, whatever
// the clock says. It returns the mark's index, -1 when nothing landed.
func placeMark(p *Plan, intents []PlanIntent, landed []bool) int {
	markAt := -1
	for i := len(intents) - 1; i >= 0; i-- {
		if landed[i] {
			markAt = i
			break
		}
	}
	if markAt >= 0 {
		it := intents[markAt]
		w := p.LandedAs[it.ID]
		m := &Mark{Intent: it.ID, RemoteID: w.RemoteID}
		if !w.CreatedAt.IsZero() {
			t := w.CreatedAt
			m.CreatedAt = &t
		}
		p.Mark = m
	}
	return markAt
}

// bucketIntents decides each intent's bucket, in this order of precedence:
// landed, unexecutable, unresolved (the listing is too old to judge it),
// untouched (above the mark) or a hole (below it); the untouched and the
// holes are replayed. A replayed intent that landed is recorded so the
// accounting refuses the plan.
func bucketIntents(p *Plan, listedAt *time.Time, intents []PlanIntent, byID map[string]int, landed []bool, unexec map[string]bool, markAt int) {
	for i, it := range intents {
		switch {
		case landed[i]:
			p.Landed = append(p.Landed, it.ID)
		case unexec[it.ID]:
			p.Unexecutable = append(p.Unexecutable, it.ID)
		case absenceTooEarly(listedAt, it):
			p.Unresolved = append(p.Unresolved, it.ID)
		case i > markAt:
			p.Untouched = append(p.Untouched, it.ID)
			p.Replay = append(p.Replay, it.ID)
			if it.AttemptStartedAt != nil {
				p.UntouchedAttempted = append(p.UntouchedAttempted, it.ID)
			}
		default:
			p.Holes = append(p.Holes, it.ID)
			p.Replay = append(p.Replay, it.ID)
		}
	}
	for _, id := range p.Replay {
		if landed[byID[id]] {
			p.ReplayAlreadyLanded = append(p.ReplayAlreadyLanded, id)
		}
	}
}

// account checks the accounting identity, and that the buckets partition
// the intents: each intent in exactly one, none replayed that landed.
func account(p *Plan, total int) Accounting {
	a := Accounting{Total: total, Landed: len(p.Landed), Replay: len(p.Replay),
		Unexecutable: len(p.Unexecutable), Unresolved: len(p.Unresolved)}
	seen := make(map[string]int, total)
	for _, bucket := range [][]string{p.Landed, p.Replay, p.Unexecutable, p.Unresolved} {
		for _, id := range bucket {
			seen[id]++
		}
	}
	partition := len(seen) == total
	for _, n := range seen {
		if n != 1 {
			partition = false
		}
	}
	a.Balanced = a.Landed+a.Replay+a.Unexecutable+a.Unresolved == a.Total &&
		len(p.Holes)+len(p.Untouched) == a.Replay &&
		len(p.ReplayAlreadyLanded) == 0 && partition
	return a
}
