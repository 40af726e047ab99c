package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func body(s string) string { return BodySHA256([]byte(s)) }

func intent(id string, rank int64, target, b string) PlanIntent {
	return PlanIntent{ID: id, Rank: rank, Target: target, HasParent: true, BodySHA256: body(b)}
}

func own(remote string, at int, target, b string) OwnWrite {
	return OwnWrite{RemoteID: remote, CreatedAt: t0.Add(time.Duration(at) * time.Second), Target: target, HasParent: true, BodySHA256: body(b)}
}

func TestMakePlanTable(t *testing.T) {
	five := []PlanIntent{intent("a", 1, "t1", "1"), intent("b", 2, "t1", "2"), intent("c", 3, "t2", "3"), intent("d", 4, "t2", "4"), intent("e", 5, "t3", "5")}
	tests := []struct {
		name                                           string
		in                                             PlanInput
		mark                                           string
		landed, untouched, holes, replay, unexec, left []string
	}{
		{name: "nothing landed: all untouched", in: PlanInput{Intents: five},
			untouched: []string{"a", "b", "c", "d", "e"}, replay: []string{"a", "b", "c", "d", "e"}},
		{name: "prefix landed", in: PlanInput{Intents: five, OwnWrites: []OwnWrite{own("r1", 1, "t1", "1"), own("r2", 2, "t1", "2")}},
			mark: "b", landed: []string{"a", "b"}, untouched: []string{"c", "d", "e"}, replay: []string{"c", "d", "e"}},
		{name: "skipped and reordered: mark by rank, hole replayed",
			// d landed before b by the clock, and c was skipped.
			in:   PlanInput{Intents: five, OwnWrites: []OwnWrite{own("r1", 1, "t1", "1"), own("r4", 2, "t2", "4"), own("r2", 3, "t1", "2")}},
			mark: "d", landed: []string{"a", "b", "d"}, holes: []string{"c"}, untouched: []string{"e"}, replay: []string{"c", "e"}},
		{name: "unexecutable bucketed, not queued",
			in:   PlanInput{Intents: five, OwnWrites: []OwnWrite{own("r3", 1, "t2", "3")}, Unexecutable: []string{"a", "e"}},
			mark: "c", landed: []string{"c"}, holes: []string{"b"}, untouched: []string{"d"}, replay: []string{"b", "d"}, unexec: []string{"a", "e"}},
		{name: "unexecutable that landed counts as landed",
			in:   PlanInput{Intents: five, OwnWrites: []OwnWrite{own("r1", 1, "t1", "1")}, Unexecutable: []string{"a"}},
			mark: "a", landed: []string{"a"}, untouched: []string{"b", "c", "d", "e"}, replay: []string{"b", "c", "d", "e"}},
		{name: "own writes nobody drafted are reported",
			in:   PlanInput{Intents: five[:1], OwnWrites: []OwnWrite{own("x", 1, "t9", "zz"), own("r1", 2, "t1", "1")}},
			mark: "a", landed: []string{"a"}, left: []string{"x"}},
		{name: "stale listing leaves the attempt unresolved",
			in: PlanInput{Intents: []PlanIntent{intent("a", 1, "t1", "1"), {ID: "b", Rank: 2, Target: "t1", HasParent: true, BodySHA256: body("2"), AttemptStartedAt: ptr(t0.Add(10 * time.Second))}},
				OwnWrites: []OwnWrite{own("r1", 1, "t1", "1")}, ListedAt: ptr(t0.Add(5 * time.Second))},
			mark: "a", landed: []string{"a"}},
		{name: "stale listing that shows the attempt resolves nothing either",
			in: PlanInput{Intents: []PlanIntent{intent("a", 1, "t1", "1"), {ID: "b", Rank: 2, Target: "t1", HasParent: true, BodySHA256: body("2"), AttemptStartedAt: ptr(t0.Add(10 * time.Second))}},
				OwnWrites: []OwnWrite{own("r1", 1, "t1", "1"), own("r2", 12, "t1", "2")}, ListedAt: ptr(t0.Add(5 * time.Second))},
			mark: "a", landed: []string{"a"}},
		{name: "fresh listing without the attempt replays it",
			in: PlanInput{Intents: []PlanIntent{intent("a", 1, "t1", "1"), {ID: "b", Rank: 2, Target: "t1", HasParent: true, BodySHA256: body("2"), AttemptStartedAt: ptr(t0.Add(10 * time.Second))}},
				OwnWrites: []OwnWrite{own("r1", 1, "t1", "1")}, ListedAt: ptr(t0.Add(11 * time.Second))},
			mark: "a", landed: []string{"a"}, untouched: []string{"b"}, replay: []string{"b"}},
		{name: "fresh listing without the attempt, before its deadline, leaves it unresolved",
			in: PlanInput{Intents: []PlanIntent{intent("a", 1, "t1", "1"), {ID: "b", Rank: 2, Target: "t1", HasParent: true, BodySHA256: body("2"), AttemptStartedAt: ptr(t0.Add(10 * time.Second)), AttemptUntil: ptr(t0.Add(40 * time.Second))}},
				OwnWrites: []OwnWrite{own("r1", 1, "t1", "1")}, ListedAt: ptr(t0.Add(40 * time.Second))},
			mark: "a", landed: []string{"a"}},
		{name: "fresh listing with the attempt, before its deadline, shows it landed",
			in: PlanInput{Intents: []PlanIntent{intent("a", 1, "t1", "1"), {ID: "b", Rank: 2, Target: "t1", HasParent: true, BodySHA256: body("2"), AttemptStartedAt: ptr(t0.Add(10 * time.Second)), AttemptUntil: ptr(t0.Add(40 * time.Second))}},
				OwnWrites: []OwnWrite{own("r1", 1, "t1", "1"), own("r2", 12, "t1", "2")}, ListedAt: ptr(t0.Add(20 * time.Second))},
			mark: "b", landed: []string{"a", "b"}},
		{name: "listing after the attempt's deadline without it replays it",
			in: PlanInput{Intents: []PlanIntent{intent("a", 1, "t1", "1"), {ID: "b", Rank: 2, Target: "t1", HasParent: true, BodySHA256: body("2"), AttemptStartedAt: ptr(t0.Add(10 * time.Second)), AttemptUntil: ptr(t0.Add(40 * time.Second))}},
				OwnWrites: []OwnWrite{own("r1", 1, "t1", "1")}, ListedAt: ptr(t0.Add(41 * time.Second))},
			mark: "a", landed: []string{"a"}, untouched: []string{"b"}, replay: []string{"b"}},
		{name: "journal-known landed counts without a listing",
			in:   PlanInput{Intents: []PlanIntent{intent("a", 1, "t1", "1"), {ID: "b", Rank: 2, Target: "t1", HasParent: true, BodySHA256: body("2"), KnownLanded: true, KnownRemoteID: "r2"}, intent("c", 3, "t1", "3")}},
			mark: "b", landed: []string{"b"}, holes: []string{"a"}, untouched: []string{"c"}, replay: []string{"a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := MakePlan(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			eq := func(what string, got, want []string) {
				t.Helper()
				if want == nil {
					want = []string{}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			if tt.mark == "" && p.Mark != nil || tt.mark != "" && (p.Mark == nil || p.Mark.Intent != tt.mark) {
				t.Errorf("mark = %+v, want %q", p.Mark, tt.mark)
			}
			eq("landed", p.Landed, tt.landed)
			eq("untouched", p.Untouched, tt.untouched)
			eq("holes", p.Holes, tt.holes)
			eq("replay", p.Replay, tt.replay)
			eq("unexecutable", p.Unexecutable, tt.unexec)
			eq("unmatched", p.UnmatchedOwnWrites, tt.left)
			eq("replay_already_landed", p.ReplayAlreadyLanded, nil)
			a := p.Accounting
			if !a.Balanced || a.Landed+a.Replay+a.Unexecutable+a.Unresolved != a.Total || a.Total != len(tt.in.Intents) {
				t.Errorf("accounting %+v", a)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// A sender that reordered and skipped: the newest row by clock is not the
// highest-ranked landed intent. A planner that takes the newest row as the
// mark and treats everything above it as never sent would replay an intent
// that landed; MakePlan does not.
func TestReorderedSenderNewestRowWouldReplayLanded(t *testing.T) {
	intents := []PlanIntent{intent("a", 1, "t", "1"), intent("b", 2, "t", "2"), intent("c", 3, "t", "3"), intent("d", 4, "t", "4")}
	// c was emitted before b by the provider's clock; b is the newest row.
	writes := []OwnWrite{own("ra", 1, "t", "1"), own("rc", 2, "t", "3"), own("rb", 3, "t", "2")}

	naive := newestRowReplay(intents, writes)
	if !slices.Contains(naive, "c") {
		t.Fatalf("the newest-row planner should replay landed c, replays %v", naive)
	}
	p, err := MakePlan(PlanInput{Intents: intents, OwnWrites: writes})
	if err != nil {
		t.Fatal(err)
	}
	if p.Mark.Intent != "c" || !slices.Equal(p.Replay, []string{"d"}) || len(p.ReplayAlreadyLanded) != 0 {
		t.Fatalf("mark %v replay %v already landed %v", p.Mark, p.Replay, p.ReplayAlreadyLanded)
	}
}

// newestRowReplay is the mistake MakePlan avoids: the mark is the intent of
// the newest own write, and everything ranked above it is sent again.
func newestRowReplay(intents []PlanIntent, writes []OwnWrite) []string {
	var newest OwnWrite
	for _, w := range writes {
		if w.CreatedAt.After(newest.CreatedAt) {
			newest = w
		}
	}
	var markRank int64 = -1
	for _, in := range intents {
		if in.BodySHA256 == newest.BodySHA256 && in.Target == newest.Target {
			markRank = in.Rank
		}
	}
	var replay []string
	for _, in := range intents {
		if in.Rank > markRank {
			replay = append(replay, in.ID)
		}
	}
	return replay
}

func TestMakePlanRefusesDuplicateJoinKey(t *testing.T) {
	// No body on the own writes: the join falls to target+parent, which two
	// intents share.
	intents := []PlanIntent{intent("a", 1, "t1", "1"), intent("b", 2, "t1", "2")}
	writes := []OwnWrite{{RemoteID: "r", CreatedAt: t0, Target: "t1", HasParent: true}}
	_, err := MakePlan(PlanInput{Intents: intents, OwnWrites: writes})
	var dup *DuplicateKeyError
	if !errors.As(err, &dup) || !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("err = %v, want a DuplicateKeyError", err)
	}
	if dup.Join != JoinTargetParent || !slices.Equal(dup.Intents, []string{"a", "b"}) {
		t.Fatalf("dup = %+v", dup)
	}
}

// A join key that only intents known to have landed share decides nothing
// and blocks nothing: their own writes are told apart by the remote ids the
// journal recorded, and the rest of the lane is planned. A key an intent
// still to decide shares with another stays refused: an own write
// matching it could be either.
func TestMakePlanAJoinKeySharedByLandedIntentsOnly(t *testing.T) {
	landed := func(id string, rank int64, remote string) PlanIntent {
		in := intent(id, rank, "C1", "Deploy finished") // fingerprint-equal bodies
		in.KnownLanded, in.KnownRemoteID = true, remote
		return in
	}
	start := t0.Add(time.Minute)
	doubt := intent("c", 3, "C1", "Build ok")
	doubt.AttemptStartedAt, doubt.AttemptUntil = &start, &start
	listed := t0.Add(time.Hour)
	in := PlanInput{
		Intents:   []PlanIntent{landed("a", 1, "r1"), landed("b", 2, "r2"), doubt},
		OwnWrites: []OwnWrite{own("r2", 2, "C1", "Deploy finished"), own("r1", 1, "C1", "Deploy finished")},
		ListedAt:  &listed,
	}
	p, err := MakePlan(in)
	if err != nil {
		t.Fatalf("plan refused: %v", err)
	}
	if !slices.Equal(p.Landed, []string{"a", "b"}) || !slices.Equal(p.Replay, []string{"c"}) ||
		len(p.DuplicateOwnWrites) != 0 || len(p.UnmatchedOwnWrites) != 0 || p.LandedAs["a"].RemoteID != "r1" || p.LandedAs["b"].RemoteID != "r2" {
		t.Fatalf("plan %+v (landed as %v)", p, p.LandedAs)
	}
	// The write in doubt shares the landed intents' key: refused.
	doubt2 := intent("d", 4, "C1", "Deploy finished")
	doubt2.AttemptStartedAt, doubt2.AttemptUntil = &start, &start
	in.Intents = append(in.Intents, doubt2)
	var dup *DuplicateKeyError
	if _, err := MakePlan(in); !errors.As(err, &dup) {
		t.Fatalf("a key an undecided intent shares: %v, want a DuplicateKeyError", err)
	}
}

func TestChooseJoin(t *testing.T) {
	withBody := []PlanIntent{{ID: "a", Target: "t", BodySHA256: body("x")}}
	withParent := []PlanIntent{{ID: "a", Target: "t", HasParent: true, BodySHA256: body("x")}}
	for _, tt := range []struct {
		intents []PlanIntent
		own     []OwnWrite
		want    JoinKey
	}{
		{withBody, []OwnWrite{{Target: "t", BodySHA256: body("x")}}, JoinTargetParentBody},
		{withParent, []OwnWrite{{Target: "t", HasParent: true, BodySHA256: body("x")}}, JoinTargetParentBody},
		{withParent, []OwnWrite{{Target: "t", HasParent: true}}, JoinTargetParent},
		{withParent, []OwnWrite{{Target: "t", BodySHA256: body("x")}}, JoinTarget},
		{[]PlanIntent{{ID: "a", Target: "t"}}, nil, JoinTargetParent},
	} {
		if got := ChooseJoin(tt.intents, tt.own); got != tt.want {
			t.Errorf("ChooseJoin(%+v, %+v) = %s, want %s", tt.intents, tt.own, got, tt.want)
		}
	}
}

func TestMakePlanRefusesBadInput(t *testing.T) {
	for name, in := range map[string]PlanInput{
		"duplicate id":       {Intents: []PlanIntent{intent("a", 1, "t", "1"), intent("a", 2, "t", "2")}},
		"duplicate rank":     {Intents: []PlanIntent{intent("a", 1, "t", "1"), intent("b", 1, "t", "2")}},
		"unknown unexec":     {Intents: []PlanIntent{intent("a", 1, "t", "1")}, Unexecutable: []string{"zz"}},
		"missing intent id ": {Intents: []PlanIntent{intent("", 1, "t", "1")}},
	} {
		if _, err := MakePlan(in); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestAccountingRefusesUnbalanced(t *testing.T) {
	p := &Plan{Landed: []string{"a"}, Replay: []string{"a"}, Holes: []string{"a"}, ReplayAlreadyLanded: []string{"a"}}
	if a := account(p, 2); a.Balanced {
		t.Fatalf("a plan replaying a landed intent balanced: %+v", a)
	}
	p = &Plan{Landed: []string{"a"}, Replay: []string{"b"}, Untouched: []string{"b"}}
	if a := account(p, 3); a.Balanced {
		t.Fatalf("a plan missing an intent balanced: %+v", a)
	}
	p = &Plan{Landed: []string{"a", "b"}, Replay: []string{"b"}, Untouched: []string{"b"}}
	if a := account(p, 3); a.Balanced {
		t.Fatalf("a plan with an intent in two buckets balanced: %+v", a)
	}
}

func FuzzMakePlanBalances(f *testing.F) {
	f.Add(uint64(1), uint8(20), uint8(10))
	f.Add(uint64(7), uint8(3), uint8(50))
	f.Fuzz(func(t *testing.T, seed uint64, nIntents, nWrites uint8) {
		r := seed
		next := func(n int) int { r = r*6364136223846793005 + 1442695040888963407; return int((r >> 33) % uint64(n)) }
		var in PlanInput
		for i := range int(nIntents) {
			in.Intents = append(in.Intents, intent(fmt.Sprint("i", i), int64(next(1000)*100+i), fmt.Sprint("t", next(3)), fmt.Sprint(i)))
			if next(5) == 0 {
				in.Unexecutable = append(in.Unexecutable, fmt.Sprint("i", i))
			}
		}
		for j := range int(nWrites) {
			k := next(int(nIntents) + 3)
			in.OwnWrites = append(in.OwnWrites, own(fmt.Sprint("r", j), next(100), fmt.Sprint("t", next(3)), fmt.Sprint(k)))
		}
		p, err := MakePlan(in)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Accounting.Balanced || len(p.ReplayAlreadyLanded) != 0 {
			t.Fatalf("unbalanced: %+v", p.Accounting)
		}
		if p.Mark != nil {
			var markRank int64
			for _, it := range in.Intents {
				if it.ID == p.Mark.Intent {
					markRank = it.Rank
				}
			}
			for _, it := range in.Intents {
				if it.Rank > markRank && slices.Contains(p.Landed, it.ID) {
					t.Fatalf("landed %s ranks above the mark %s", it.ID, p.Mark.Intent)
				}
			}
		}
	})
}

// An intent above the mark whose attempt was in doubt, and that a listing
// assembled after its deadline does not show, is replayed with the
// untouched; but it was attempted, and the report and the JSON say so
// rather than call it never attempted.
func TestPlanSaysWhichUntouchedIntentsWereAttempted(t *testing.T) {
	start, until, listed := t0.Add(10*time.Second), t0.Add(40*time.Second), t0.Add(time.Minute)
	doubt := intent("b", 2, "t1", "2")
	doubt.AttemptStartedAt, doubt.AttemptUntil = &start, &until
	in := PlanInput{Intents: []PlanIntent{intent("a", 1, "t1", "1"), doubt, intent("c", 3, "t1", "3")},
		OwnWrites: []OwnWrite{own("r-a", 1, "t1", "1")}, ListedAt: &listed}
	p, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Untouched, []string{"b", "c"}) || !slices.Equal(p.UntouchedAttempted, []string{"b"}) {
		t.Fatalf("untouched %v, of which attempted %v; want [b c], [b]", p.Untouched, p.UntouchedAttempted)
	}
	var b strings.Builder
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); strings.Contains(got, "untouched:             2 (ranked above the mark, never attempted)") ||
		!strings.Contains(got, "1 attempted in doubt") || !strings.Contains(got, "1 never attempted") {
		t.Fatalf("report:\n%s", got)
	}
	js, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(js), `"untouched_attempted":["b"]`) {
		t.Fatalf("JSON %s %v", js, err)
	}
}
