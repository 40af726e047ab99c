package outbox

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/fieldtext"
)

// The outbox's reports as text, for a terminal: the same fields their JSON
// carries. Times are shown in the local zone.

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func table(w io.Writer, header string, rows func(tw io.Writer)) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	return tw.Flush()
}

// CountsText is a lane's intents by state ("landed 3, pending 1").
func CountsText(counts map[State]int) string {
	var parts []string
	for st, n := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", st, n))
	}
	sort.Strings(parts)
	return fieldtext.OrDash(strings.Join(parts, ", "))
}

// LaneViews are lanes as people see them.
type LaneViews []LaneView

// WriteText writes lanes as a table.
func (ls LaneViews) WriteText(w io.Writer) error {
	if len(ls) == 0 {
		_, err := fmt.Fprintln(w, "no lanes; add one with `tidemark outbox lane add`")
		return err
	}
	return table(w, "LANE\tPROVIDER\tGUARANTEE\tHEALTH\tMIN GAP\tTOKEN\tHOLDER\tIN FLIGHT\tNEXT SEND\tINTENTS", func(tw io.Writer) {
		for _, l := range ls {
			g := "?"
			if l.Guarantee != nil {
				g = string(l.Guarantee.Guarantee)
			}
			next := "now"
			if l.NextSendAt != nil && l.NextSendAt.After(l.AsOf) {
				next = fieldtext.Day(*l.NextSendAt)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", l.Name, l.Provider, g, l.Health, l.MinGap.Std(), l.LeaseToken,
				HolderText(l.Lane), fieldtext.OrDash(l.InFlight), next, CountsText(l.Counts))
		}
	})
}

// HolderText is a lane's writer as a table shows it: "-" with none, and
// marked "(gone)" or "(lease expired)" when its lease no longer stands
// (Lane.ClaimState), as a source's claim is.
func HolderText(l Lane) string {
	switch l.ClaimState {
	case tidemark.ClaimGone:
		return l.LeaseHolder + " (gone)"
	case tidemark.ClaimExpired:
		return l.LeaseHolder + " (lease expired)"
	}
	return fieldtext.OrDash(l.LeaseHolder)
}

// WriterWords says, after a lane's writer, why a lease that no longer
// stands sends nothing ("" for one that stands, or no writer): lane show
// and the console say it alike.
func WriterWords(l Lane) string {
	switch l.ClaimState {
	case tidemark.ClaimGone:
		return fmt.Sprintf(": not sending, process %s of this host is gone; the next delivery takes the lane over", l.LeaseHolder)
	case tidemark.ClaimExpired:
		return ": not sending, its lease expired; the next delivery takes the lane over"
	}
	return ""
}

// WriteText writes one lane: the table row, then, when it is broken or
// failing, why, and its guarantee.
func (l LaneView) WriteText(w io.Writer) error {
	if err := (LaneViews{l}).WriteText(w); err != nil {
		return err
	}
	if words := WriterWords(l.Lane); words != "" {
		fmt.Fprintf(w, "\nwriter %s%s\n", l.LeaseHolder, words)
	}
	if l.Problem != "" {
		fmt.Fprintf(w, "\n%s: %s\n", l.Health, l.Problem)
	}
	if g := l.Guarantee; g != nil {
		fmt.Fprintf(w, "\nguarantee: %s\n  %s\n", g.Guarantee, g.Why)
		if len(g.Missing) > 0 {
			fmt.Fprintf(w, "  exactly once needs one of: %s\n", strings.ReplaceAll(strings.Join(g.Missing, ", "), "|", " or "))
		}
	}
	if r := l.LastReconciliation; r != nil && r.UnmatchedOwnWrites+r.DuplicateOwnWrites > 0 {
		fmt.Fprintf(w, "\nlast reconciliation (%s): %d own writes matched no intent, %d repeated a landed intent: "+
			"writes to go and look at (another tool's under this account, or duplicates); `outbox reconcile %s` lists them all\n",
			fieldtext.Day(r.At), r.UnmatchedOwnWrites, r.DuplicateOwnWrites, l.Name)
		if n := r.UnmatchedOwnWrites + r.DuplicateOwnWrites; len(r.RemoteIDs) > 0 {
			more := ""
			if n > len(r.RemoteIDs) {
				more = fmt.Sprintf(" … and %d more", n-len(r.RemoteIDs))
			}
			fmt.Fprintf(w, "  remote ids: %s%s\n", strings.Join(r.RemoteIDs, " "), more)
		}
	}
	return nil
}

// Channels are channels as people see them.
type Channels []Channel

// WriteText writes channels as a table.
func (cs Channels) WriteText(w io.Writer) error {
	err := table(w, "ID\tSOURCE\tLANE\tTARGET\tPARENT", func(tw io.Writer) {
		for _, c := range cs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, c.Source, c.Lane, c.Target, fieldtext.OrDash(c.Parent))
		}
	})
	for _, c := range cs {
		if err == nil && c.Note != "" {
			_, err = fmt.Fprintf(w, "note on %s: %s\n", c.ID, c.Note)
		}
	}
	return err
}

// Intents are intents as people see them.
type Intents []Intent

// WriteText writes intents as a table.
func (ins Intents) WriteText(w io.Writer) error {
	return table(w, "LANE\tRANK\tINTENT\tSTATE\tTARGET\tREMOTE\tATTEMPTS\tREASON", func(tw io.Writer) {
		for _, in := range ins {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\n", in.Lane, in.Rank, in.ID, in.State, clip(in.Target, 40),
				fieldtext.OrDash(in.RemoteID), in.Attempts, clip(in.StateReason, 60))
		}
	})
}

// WriteText writes an intent, the evidence of its checks, its audit trail
// and its body.
func (d IntentDetail) WriteText(w io.Writer) error {
	in := d.Intent
	fmt.Fprintf(w, "intent %s  lane %s  rank %d  %s\n", in.ID, in.Lane, in.Rank, in.State)
	fmt.Fprintf(w, "target %s  parent %s  body %s  key %s\n", in.Target, fieldtext.OrDash(in.Parent), clip(in.BodySHA256, 12), in.IdempotencyKey)
	switch {
	case in.Attempts == 0 && in.FirstAttemptAt == nil:
		fmt.Fprintln(w, "attempts 0: never attempted")
	default:
		first, latest := "-", "-"
		if in.FirstAttemptAt != nil {
			first = fieldtext.Day(*in.FirstAttemptAt)
		}
		if in.LastAttemptAt != nil {
			latest = fieldtext.Day(*in.LastAttemptAt)
		}
		fmt.Fprintf(w, "attempts %d: the first at %s, the latest at %s\n", in.Attempts, first, latest)
	}
	if in.RemoteID != "" {
		fmt.Fprintf(w, "landed as %s\n", in.RemoteID)
	}
	if in.StateReason != "" {
		fmt.Fprintf(w, "reason: %s\n", in.StateReason)
	}
	for _, c := range d.Checks {
		fmt.Fprintf(w, "check %s  %s  %s\n", fieldtext.Day(c.At), c.Verdict, c.Evidence)
	}
	for _, a := range d.Actions {
		fmt.Fprintf(w, "%s %s by %s: %s → %s (%s)\n", fieldtext.Day(a.At), a.Action, a.Actor, a.From, a.To, a.Reason)
	}
	_, err := fmt.Fprintf(w, "\n%s\n", in.Body)
	return err
}

// Verdict says in words what a gap report shows.
func (r GapReport) Verdict() string {
	switch {
	case r.Count == 0:
		return "no gaps yet"
	case !r.OK:
		return "GAPS BELOW THRESHOLD"
	}
	return "ok"
}

// GapReports are lanes' gap reports.
type GapReports []GapReport

// WriteText writes gap reports as a table.
func (rs GapReports) WriteText(w io.Writer) error {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return table(w, "LANE\tGAPS\tMIN\tMEDIAN\tTHRESHOLD\tBELOW\tVERDICT", func(tw io.Writer) {
		for _, r := range rs {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%s\n", r.Lane, r.Count, ms(r.MinMS), ms(r.MedianMS), ms(r.ThresholdMS), r.BelowThreshold, r.Verdict())
		}
	})
}

// LaneActions are a lane's audit.
type LaneActions []LaneAction

// WriteText writes a lane's audit as a table.
func (as LaneActions) WriteText(w io.Writer) error {
	return table(w, "AT\tACTION\tACTOR\tDETAIL", func(tw io.Writer) {
		for _, a := range as {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", fieldtext.Day(a.At), a.Action, a.Actor, a.Detail)
		}
	})
}

// WriteSteps writes what one delivery did on a lane, in a line, after a
// line per duplicate alert.
func WriteSteps(w io.Writer, lane string, steps []Step, errText string) error {
	counts := map[string]int{}
	deferred := map[string]bool{} // intents, not attempts: one told "later" twice is one
	var doubt *Plan               // the latest reconciliation's plan: what it left in doubt
	for _, s := range steps {
		switch {
		case s.Outcome == OutcomeDeferred:
			if !deferred[s.IntentID] {
				deferred[s.IntentID] = true
				counts[string(OutcomeDeferred)]++
			}
		case s.Kind == StepSent:
			counts[string(s.Outcome)]++
		case s.Kind == StepBucketed:
			counts["unexecutable"]++
		case s.Kind == StepReconciled:
			counts["reconciled"]++
			doubt = s.Plan
		}
		if s.Alert != "" {
			fmt.Fprintf(w, "%s: ALERT intent %s: %s\n", lane, s.IntentID, s.Alert)
		}
	}
	fmt.Fprintf(w, "%-16s landed %d, not landed %d, deferred %d, unexecutable %d, unknown %d, reconciled %d", lane,
		counts["landed"], counts["not_landed"], counts["deferred"], counts["unexecutable"], counts["unknown"], counts["reconciled"])
	if doubt != nil && len(doubt.Unresolved) > 0 {
		fmt.Fprintf(w, ", %d still in doubt (unresolved)", len(doubt.Unresolved))
	}
	if n := counts[string(OutcomeRefused)]; n > 0 {
		fmt.Fprintf(w, ", refused %d", n)
	}
	if errText != "" {
		fmt.Fprintf(w, "  error: %s", errText)
	}
	_, err := fmt.Fprintln(w)
	return err
}

// PlanFilesHelp describes the files PlanFiles reads, for `outbox plan`.
const PlanFilesHelp = `Plan a recovery offline, from exported data, with no database.

INTENTS.jsonl: one object a line: id, rank (default: the line order), target,
optional parent, optional body or body_sha256.
OWN.jsonl: our own writes as the provider listed them: remote_id, created_at
(RFC 3339), target, optional parent, optional body or body_sha256.
IDS.txt: intent ids, one a line, whose targets cannot accept a write.

The join uses the strongest identity both files carry (target+parent+body_sha256,
else target+parent, else target); a join key that is not unique among the
intents is refused. The mark is the highest-ranked landed intent. Exits 0 only
when the plan's accounting balances.`
