package outbox_test

import (
	"fmt"
	"time"

	"github.com/tidemark/tidemark/outbox"
)

// A probe answered 90 seconds after an attempt began (its write bounded to
// 30 seconds), from a cache that had held its copy for two minutes: the
// copy predates the attempt, so it decides nothing, even though it says
// the write is not there. A copy 70 seconds old was assembled after the
// attempt began, but while its write could still be landing: not finding
// it says nothing either. One 30 seconds old says the write never landed.
func ExampleResolve() {
	attempt := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	until := attempt.Add(30 * time.Second)
	answer := outbox.ProbeAnswer{
		RequestTime: attempt.Add(90 * time.Second),
		Date:        "Fri, 01 May 2026 12:01:30 GMT",
		Age:         "120",
		Found:       false,
	}
	for _, age := range []string{"120", "70", "30"} {
		answer.Age = age
		res, f := outbox.Resolve(answer, attempt, until, time.Second)
		fmt.Println(res, f.SnapshotAt.Format(time.TimeOnly))
	}
	// Output:
	// unresolved 11:59:29
	// unresolved 12:00:19
	// pending 12:00:59
}

// A sender skipped c and emitted d before b. The mark is d, the
// highest-ranked landed intent, not b, the newest row; c is a hole.
func ExampleMakePlan() {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	in := func(id string, rank int64) outbox.PlanIntent {
		return outbox.PlanIntent{ID: id, Rank: rank, Target: "issue#1", BodySHA256: outbox.BodySHA256([]byte(id))}
	}
	own := func(id string, sec int) outbox.OwnWrite {
		return outbox.OwnWrite{RemoteID: "r-" + id, CreatedAt: t0.Add(time.Duration(sec) * time.Second), Target: "issue#1", BodySHA256: outbox.BodySHA256([]byte(id))}
	}
	p, err := outbox.MakePlan(outbox.PlanInput{
		Intents:   []outbox.PlanIntent{in("a", 1), in("b", 2), in("c", 3), in("d", 4), in("e", 5)},
		OwnWrites: []outbox.OwnWrite{own("a", 1), own("d", 2), own("b", 3)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("mark", p.Mark.Intent, "holes", p.Holes, "untouched", p.Untouched, "replay", p.Replay, "balanced", p.Accounting.Balanced)
	// Output: mark d holes [c] untouched [e] replay [c e] balanced true
}
