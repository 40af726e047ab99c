package outbox

import (
	"fmt"
	"time"

	"github.com/tidemark/tidemark"
)

// Check is one look at an intent that is unresolved or unexecutable: when,
// what it concluded, and the evidence it concluded it from (a probe's
// headers, a target's status), kept so a retirement can be audited.
type Check struct {
	At       time.Time `json:"at"`
	Verdict  string    `json:"verdict"` // unresolved, unexecutable, landed, pending
	Evidence string    `json:"evidence"`
}

// RetirementPolicy retires an intent that stays unresolved or unexecutable
// for long. "Unresolved is not never": one check, or many in a burst, is not
// enough; the policy needs Checks checks spaced at least Spacing apart, all
// of them still unresolved or unexecutable. A zero Checks means never
// automatically: only an operator retires.
type RetirementPolicy struct {
	Checks  int               `json:"checks"`
	Spacing tidemark.Duration `json:"spacing"`
}

// CheckDue reports whether a new check is due, given the last one.
func (p RetirementPolicy) CheckDue(last *time.Time, now time.Time) bool {
	return last == nil || !now.Before(last.Add(p.Spacing.Std()))
}

// Due reports whether an intent with these checks (oldest first) is due for
// retirement, and why or why not. A check that resolved the intent
// (landed or pending) restarts the count.
func (p RetirementPolicy) Due(checks []Check) (bool, string) {
	if p.Checks <= 0 {
		return false, "no automatic retirement: operators retire"
	}
	counted := 0
	var last time.Time
	for _, c := range checks {
		switch c.Verdict {
		case "unresolved", "unexecutable":
		default:
			counted, last = 0, time.Time{}
			continue
		}
		if counted == 0 || !c.At.Before(last.Add(p.Spacing.Std())) {
			counted++
			last = c.At
		}
	}
	if counted >= p.Checks {
		return true, fmt.Sprintf("%d checks spaced at least %s apart found it unresolved or unexecutable", counted, p.Spacing.Std())
	}
	return false, fmt.Sprintf("%d of %d spaced checks so far", counted, p.Checks)
}
