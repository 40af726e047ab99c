package outbox

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tidemark/tidemark/internal/fieldtext"
)

// maxReportIDs bounds how many ids a readable report lists per bucket.
const maxReportIDs = 20

// MarshalJSON writes the plan with its duplicate own writes, which the
// readable report lists too: the JSON says everything the report does,
// every list present ([] when empty).
func (p Plan) MarshalJSON() ([]byte, error) {
	type fields Plan // the plan's own fields, without this method
	dups, tried := p.DuplicateOwnWrites, p.UntouchedAttempted
	if dups == nil {
		dups = []string{}
	}
	if tried == nil {
		tried = []string{}
	}
	return json.Marshal(struct {
		fields
		UntouchedAttempted []string `json:"untouched_attempted"`
		DuplicateOwnWrites []string `json:"duplicate_own_writes"`
	}{fields(p), tried, dups})
}

// WriteText writes the plan as a readable report: the same content as its
// JSON form, for people.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "join on:      %s\n", p.Join)
	if p.Mark == nil {
		fmt.Fprintf(&b, "mark:         none (no intent landed)\n")
	} else {
		at := "time unknown"
		if p.Mark.CreatedAt != nil {
			at = fieldtext.Day(*p.Mark.CreatedAt)
		}
		fmt.Fprintf(&b, "mark:         %s (remote %s, %s): the highest-ranked landed intent\n", p.Mark.Intent, p.Mark.RemoteID, at)
	}
	untouched := "ranked above the mark, never attempted"
	if n := len(p.UntouchedAttempted); n > 0 {
		// Sent in doubt, and not shown by a listing made after the attempt
		// could last land: attempted, not landed.
		untouched = fmt.Sprintf("ranked above the mark, not landed: %d attempted in doubt and not listed after the attempt's deadline (%s), %d never attempted",
			n, strings.Join(p.UntouchedAttempted[:min(n, maxReportIDs)], " "), len(p.Untouched)-n)
	}
	for _, row := range []struct {
		name string
		ids  []string
		why  string
	}{
		{"landed", p.Landed, ""},
		{"untouched", p.Untouched, untouched},
		{"holes", p.Holes, "ranked below the mark, did not land"},
		{"replay", p.Replay, "to send, in rank order"},
		{"unexecutable", p.Unexecutable, "targets cannot accept a write; bucketed, not queued"},
		{"unresolved", p.Unresolved, cmp.Or(p.UnresolvedWhy, "no fresh answer says whether they landed")},
		{"replay already landed", p.ReplayAlreadyLanded, "must be empty"},
		{"unmatched own writes", p.UnmatchedOwnWrites, "remote ids no intent matches"},
		{"duplicate own writes", p.DuplicateOwnWrites, "remote ids repeating a landed intent: duplicates to find"},
	} {
		if row.name == "unresolved" && len(row.ids) == 0 || row.name == "duplicate own writes" && len(row.ids) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%-22s %d", row.name+":", len(row.ids))
		if row.why != "" {
			fmt.Fprintf(&b, " (%s)", row.why)
		}
		b.WriteString("\n")
		if len(row.ids) > 0 {
			shown := row.ids
			if len(shown) > maxReportIDs {
				shown = shown[:maxReportIDs]
			}
			fmt.Fprintf(&b, "    %s", strings.Join(shown, " "))
			if len(row.ids) > len(shown) {
				fmt.Fprintf(&b, " … and %d more", len(row.ids)-len(shown))
			}
			b.WriteString("\n")
		}
	}
	a := p.Accounting
	verdict := "balanced"
	if !a.Balanced {
		verdict = "DOES NOT BALANCE: plan refused"
	}
	fmt.Fprintf(&b, "accounting:   total %d = landed %d + replay %d + unexecutable %d + unresolved %d: %s\n",
		a.Total, a.Landed, a.Replay, a.Unexecutable, a.Unresolved, verdict)
	_, err := io.WriteString(w, b.String())
	return err
}
