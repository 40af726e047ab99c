package ingest

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/fieldtext"
)

// The text forms of the ingest reports, for people at a terminal (the
// CLI prints them; --json prints the same values as JSON). Times are in
// UTC, saying so (fieldtext.Day); long values are cut.

// SourceList is a listing of sources.
type SourceList []tidemark.Source

// RunList is a listing of runs.
type RunList []tidemark.Run

// EventList is a listing of events.
type EventList []tidemark.Event

// WriteReport writes one line about a run as it ends: its outcome, the
// events it found and where it left the cursor; or, with err and no
// outcome, why it was not run.
func WriteReport(w io.Writer, r Report, err error) error {
	switch {
	case r.Outcome == "" && err != nil:
		_, err = fmt.Fprintf(w, "%-20s not run: %s%s\n", r.Source, tidemark.Text(err), tidemark.Hint(err))
	case r.Outcome.Advances():
		note := ""
		if r.Note != "" {
			note = "  note: " + r.Note
		}
		_, err = fmt.Fprintf(w, "%-20s %-11s %d new, %d changed events  cursor %s → %s%s\n", r.Source, r.Outcome,
			r.EventsNew, r.EventsChanged, fieldtext.OrDash(fieldtext.Cursor(r.CursorBefore)), fieldtext.OrDash(fieldtext.Cursor(r.CursorAfter)), note)
	default:
		_, err = fmt.Fprintf(w, "%-20s %-11s %s (cursor stays at %s)\n", r.Source, r.Outcome, r.Error, fieldtext.OrDash(fieldtext.Cursor(r.CursorBefore)))
	}
	return err
}

// WriteText writes a table of the sources with their health.
func (l SourceList) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tHEALTH\tWINDOW\tLAST OUTCOME\tCURSOR\tNEXT DUE")
	for _, s := range l {
		due, _, brief := NextTryWords(s)
		switch {
		case NotDue(s) != "":
			due = "not due"
		case brief != "":
			due += " (" + brief + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Kind, s.State, s.Health(), WindowBrief(s),
			fieldtext.OrDash(string(s.LastOutcome)), fieldtext.OrDash(fieldtext.Cursor(s.Cursor)), due)
	}
	return tw.Flush()
}

// ClaimWords says, after a claim's holder, run and lease, why a claim
// that no longer stands runs nothing ("" for a claim that stands): the
// console and source show say it alike.
func ClaimWords(src tidemark.Source) string {
	switch src.ClaimState {
	case tidemark.ClaimGone:
		return fmt.Sprintf(": not running, process %s of this host is gone; the next claim takes it over", src.ClaimHolder)
	case tidemark.ClaimExpired:
		return ": not running, its lease expired; the next claim takes it over"
	}
	return ""
}

// WriteText writes a table of the runs, with their sources.
func (l RunList) WriteText(w io.Writer) error { return l.writeText(w, true) }

func (l RunList) writeText(w io.Writer, withSource bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if withSource {
		fmt.Fprint(tw, "SOURCE\t")
	}
	fmt.Fprintln(tw, "STARTED\tRUN\tSTATUS\tOUTCOME\tNEW\tCHANGED\tHOLDER\tERROR")
	for _, r := range l {
		if withSource {
			fmt.Fprintf(tw, "%s\t", r.SourceName)
		}
		said := r.Error
		if said == "" && r.Note != "" {
			said = "note: " + r.Note // a settled run's: what its fetch noticed
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", fieldtext.Day(r.StartedAt), r.ID,
			r.StatusWords(), fieldtext.OrDash(string(r.Outcome)), r.EventsNew, r.EventsChanged, r.Holder, fieldtext.Cut(said, 80))
	}
	return tw.Flush()
}

// WriteText writes a table of the events.
func (l EventList) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OCCURRED\tEVENT\tREV\tTITLE")
	for _, e := range l {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", fieldtext.Day(e.OccurredAt), e.ID, e.Revision, fieldtext.Cut(e.Title, 72))
	}
	return tw.Flush()
}

// WriteText writes the source's settings and state, then the workers that
// could not serve it, its recent runs and operator actions.
func (d Detail) WriteText(w io.Writer) error {
	src := d.Source
	kv := func(k, format string, args ...any) {
		if k != "" { // "": a line more of the key before
			k += ":"
		}
		fmt.Fprintf(w, "%-15s"+format+"\n", append([]any{k}, args...)...)
	}
	kv("name", "%s", src.Name)
	kv("kind", "%s", src.Kind)
	kv("location", "%s", src.ShownLocation())
	for k, v := range src.Config {
		kv("config", "%s=%s", k, v)
	}
	if src.AllowPrivate {
		kv("private", "allowed (it may reach private, loopback and link-local addresses)")
	}
	kv("state", "%s (health: %s)", src.State, src.Health())
	kv("schedule", "every %s, %d attempts per window", src.Interval.Std(), src.RetryBudget)
	kv("cursor", "%s (version %d)", fieldtext.OrDash(src.Cursor), src.CursorVersion)
	kv("window", "%s", WindowWords(src))
	if src.TerminalReason != "" {
		kv("terminal", "%s", src.TerminalReason)
	}
	if src.FailingSince != nil {
		kv("failing since", "%s", fieldtext.Day(*src.FailingSince))
	}
	kv("last outcome", "%s", fieldtext.OrDash(string(src.LastOutcome)))
	if src.LastError != "" {
		kv("last error", "%s", src.LastError)
	}
	if src.ClaimHolder != "" {
		kv("claimed by", "%s (run %s, lease until %s)%s", src.ClaimHolder, src.ClaimRunID, fieldtext.Day(*src.LeaseExpiresAt), ClaimWords(src))
	}
	when, why, _ := NextTryWords(src)
	kv("next due", "%s", when)
	for l := range strings.SplitSeq(why, "\n") {
		if l != "" {
			kv("", "%s", l)
		}
	}
	if len(d.UnservedBy) > 0 {
		fmt.Fprintln(w, "\nworkers that could not serve it (no budget spent; other workers take it):")
		for _, u := range d.UnservedBy {
			fmt.Fprintf(w, "  %s  at %s, leaves it to other workers until %s: %s\n", u.Holder, fieldtext.Day(u.At), fieldtext.Day(u.Until), u.Reason)
		}
	}
	if len(d.Runs) > 0 {
		fmt.Fprintln(w, "\nrecent runs:")
		RunList(d.Runs).writeText(w, false)
	}
	if len(d.Actions) > 0 {
		fmt.Fprintln(w, "\noperator actions:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, ac := range d.Actions {
			fmt.Fprintf(tw, "  %s\t%s\tby %s\t%s → %s\t%s\n", fieldtext.Day(ac.At), ac.Action, ac.Actor,
				fieldtext.OrDash(fieldtext.Cursor(ac.CursorBefore)), fieldtext.OrDash(fieldtext.Cursor(ac.CursorAfter)), ac.Note)
		}
		return tw.Flush()
	}
	return nil
}

// WriteText says what a removal deleted.
func (r Removal) WriteText(w io.Writer) error {
	if loses := r.Loses(); loses != "" {
		_, err := fmt.Fprintf(w, "removed %s and %s\n", r.Source.Name, loses)
		return err
	}
	_, err := fmt.Fprintf(w, "removed %s\n", r.Source.Name)
	return err
}

// WriteText writes the outcome and the items that would become events
// (the first 50), with their evidence when the report carries it.
func (r TestReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "kind:      %s\nlocation:  %s\n", r.Kind, r.Location)
	switch r.Outcome {
	case tidemark.OutcomeItems:
		fmt.Fprintf(w, "outcome:   items — %d would become events (nothing was stored)\n", len(r.Items))
	case tidemark.OutcomeEmpty:
		fmt.Fprintln(w, "outcome:   empty — reached, nothing new")
	default:
		fmt.Fprintf(w, "outcome:   %s — %s\n", r.Outcome, r.Error)
		if r.RetryAfterSeconds > 0 {
			fmt.Fprintf(w, "retry after: %s\n", time.Duration(r.RetryAfterSeconds*float64(time.Second)))
		}
	}
	if r.NotBeforeSeconds > 0 {
		fmt.Fprintf(w, "upstream asks not to be fetched again for %s\n", time.Duration(r.NotBeforeSeconds*float64(time.Second)))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note:      %s\n", n)
	}
	if len(r.Items) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tTITLE\tEVIDENCE")
	for i, it := range r.Items {
		if i == 50 {
			fmt.Fprintf(tw, "…\t%d more\t\n", len(r.Items)-50)
			break
		}
		fmt.Fprintf(tw, "%s\t%s\t%d bytes, sha256 %s\n", fieldtext.Cut(it.Key, 60), fieldtext.Cut(it.Title, 60), it.EvidenceBytes, fieldtext.Cut(it.EvidenceSHA256, 12))
		if it.Evidence != "" {
			tw.Flush()
			fmt.Fprintf(w, "%s\n\n", strings.TrimRight(it.Evidence, "\n"))
		}
	}
	return tw.Flush()
}

// The one-line results of an operator's action on a source: what the CLI
// prints and the console says after it.

// AddedLine says a source was added.
func AddedLine(src tidemark.Source) string {
	return fmt.Sprintf("added %s source %q (%s), every %s", src.Kind, src.Name, src.ShownLocation(), src.Interval.Std())
}

// StateLine says a source is paused or active, after a pause or a resume.
func StateLine(src tidemark.Source) string { return fmt.Sprintf("%s is %s", src.Name, src.State) }

// RetriedLine says a source's window was reopened.
func RetriedLine(src tidemark.Source) string {
	return fmt.Sprintf("%s: window reopened with a budget of %d, due now", src.Name, src.RetryBudget)
}

// SkippedLine says where a skip moved a source's cursor.
func SkippedLine(src tidemark.Source) string {
	return fmt.Sprintf("%s: cursor moved to %s (version %d)", src.Name, src.Cursor, src.CursorVersion)
}

// RenamedLine says a source named old is now src.
func RenamedLine(old string, src tidemark.Source) string { return old + " is now " + src.Name }
