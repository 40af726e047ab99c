package ingest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/fieldtext"
)

// Settings are a source's settings as every worker reads them from the
// store: what a fetch may reach, and its schedule. A nil field is left as
// it is.
type Settings struct {
	AllowPrivate *bool          `json:"allow_private,omitempty"`
	Interval     *time.Duration `json:"-"`
	RetryBudget  *int           `json:"retry_budget,omitempty"`
	// Config sets the config keys it names to its values ("" unsets a
	// key: the kind's default); keys it does not name stay. Which keys a
	// kind lets change on a source it has read is the kind's to say
	// (kinds.Set.ChangeConfig); the cursor stays whatever changes.
	Config map[string]string `json:"config,omitempty"`
}

// Empty says the change changes nothing.
func (c Settings) Empty() bool {
	return c.AllowPrivate == nil && c.Interval == nil && c.RetryBudget == nil && len(c.Config) == 0
}

// ApplyConfig returns cfg as the change leaves it: a copy, with each key
// the change names set, or deleted when its value is blank.
func (c Settings) ApplyConfig(cfg map[string]string) map[string]string {
	out := make(map[string]string, len(cfg)+len(c.Config))
	for k, v := range cfg {
		out[k] = v
	}
	for k, v := range c.Config {
		if strings.TrimSpace(v) == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// Validate refuses settings no scheduler could run.
func (c Settings) Validate() error {
	if c.Interval != nil && *c.Interval < time.Second {
		return tidemark.Invalidf("interval", c.Interval.String(), "must be at least 1s")
	}
	if c.RetryBudget != nil && (*c.RetryBudget < 1 || *c.RetryBudget > MaxRetryBudget) {
		return tidemark.Invalidf("retry budget", fmt.Sprint(*c.RetryBudget), "must be between 1 and %d", MaxRetryBudget)
	}
	for k := range c.Config {
		if strings.TrimSpace(k) == "" {
			return tidemark.Invalidf("config", k, "a key must not be blank")
		}
	}
	return nil
}

// Note describes what the settings change on src, for the audit: each
// setting as it was and as it is set, e.g. "allow_private: false -> true".
func (c Settings) Note(src tidemark.Source) string {
	var parts []string
	if c.AllowPrivate != nil {
		parts = append(parts, fmt.Sprintf("allow_private: %t -> %t", src.AllowPrivate, *c.AllowPrivate))
	}
	if c.Interval != nil {
		parts = append(parts, fmt.Sprintf("interval: %s -> %s", src.Interval.Std(), *c.Interval))
	}
	if c.RetryBudget != nil {
		parts = append(parts, fmt.Sprintf("retry_budget: %d -> %d", src.RetryBudget, *c.RetryBudget))
	}
	keys := make([]string, 0, len(c.Config))
	for k := range c.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	after := c.ApplyConfig(src.Config)
	value := func(cfg map[string]string, k string) string {
		if v, ok := cfg[k]; ok && strings.TrimSpace(v) != "" {
			return strconv.Quote(v)
		}
		return "(unset)"
	}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("config %s: %s -> %s", k, value(src.Config, k), value(after, k)))
	}
	return strings.Join(parts, "; ")
}

// A new source's schedule unless the user sets one.
const (
	DefaultInterval    = 15 * time.Minute
	DefaultRetryBudget = 5
)

// MaxRetryBudget bounds a window's retry budget.
const MaxRetryBudget = 1000

// MaxNameLen bounds a source's name.
const MaxNameLen = 100

// CheckName refuses a name that could not name a source everywhere it is
// shown and addressed. A name is one segment of its console page's path
// (/status/sources/NAME), so it is not empty, not a dot segment ("." or
// "..", which browsers and servers resolve away), and has none of / \ ? #
// or % (a name that reads as an escape would be decoded into another). It
// is what lists show of the source, so it has no surrounding space and no
// character that shows nothing or reorders what is around it (see
// hiddenRune): one source cannot pass for another.
func CheckName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return tidemark.Invalidf("source name", name, "must not be empty")
	case len(name) > MaxNameLen:
		return tidemark.Invalidf("source name", name, "must be at most %d bytes", MaxNameLen)
	case strings.TrimSpace(name) != name:
		return tidemark.Invalidf("source name", name, "must not begin or end with space")
	case name == "." || name == "..":
		return tidemark.Invalidf("source name", name, "must not be a dot segment (. or ..): no URL path can carry it")
	case strings.ContainsAny(name, "/\\?#%"):
		return tidemark.Invalidf("source name", name, "must not contain / \\ ? # or %%: the name is a URL path segment")
	case !utf8.ValidString(name):
		return tidemark.Invalidf("source name", name, "must be UTF-8 text")
	}
	for i, r := range name {
		if why := hiddenRune(r); why != "" {
			return tidemark.Invalidf("source name", name, "must not contain U+%04X (at byte %d): %s", r, i, why)
		}
	}
	return nil
}

// hiddenRune says why r may not be in a name, or "" when it may: control
// characters; format characters (category Cf: bidi overrides and isolates,
// zero-width spaces and joiners, the byte order mark, the soft hyphen);
// the other default-ignorable characters and variation selectors, which
// render as nothing; spaces other than U+0020 and line or paragraph
// separators, which look like a space or break the line; private-use
// characters, which show as whatever a font makes of them.
func hiddenRune(r rune) string {
	switch {
	case unicode.IsControl(r):
		return "a control character"
	case unicode.Is(unicode.Cf, r):
		return "an invisible format or bidi control character"
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Variation_Selector, r):
		return "a character that shows nothing"
	case r != ' ' && unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp):
		return "a space or separator other than U+0020"
	case unicode.Is(unicode.Co, r):
		return "a private-use character"
	}
	return ""
}

// Removal is what removing a source took with it. The source's audit
// trail (its operator actions, this removal last) outlives it.
type Removal struct {
	Source tidemark.Source `json:"source"`
	// Events and Revisions are the events and the frozen evidence deleted.
	Events    int `json:"events"`
	Revisions int `json:"revisions"`
	Runs      int `json:"runs"`
	// Pages are the change pages deleted from the books; the published
	// ones (Published) are withdrawn from the wiki by the next publishing round, and
	// the source's card with them.
	Pages     int `json:"pages"`
	Published int `json:"published"`
	// Channels are the outbox channels of the source, deleted; intents
	// already drafted stay in their lanes, and those not sent yet
	// (IntentsRetired) are retired, never sent: nothing announces a page
	// of a removed source.
	Channels       int    `json:"channels"`
	IntentsRetired int    `json:"intents_retired"`
	Action         Action `json:"action"`
}

// Loses says what removing would delete that cannot be fetched again, or
// "" when nothing would be lost (a source that never produced an event).
func (r Removal) Loses() string {
	var parts []string
	if r.Events > 0 {
		parts = append(parts, fmt.Sprintf("%d events with %d revisions of frozen evidence", r.Events, r.Revisions))
	}
	if r.Published > 0 {
		parts = append(parts, fmt.Sprintf("%d published pages (withdrawn from the wiki by the next publishing round)", r.Published))
	}
	if r.Channels > 0 {
		parts = append(parts, fmt.Sprintf("%d outbox channels", r.Channels))
	}
	if r.IntentsRetired > 0 {
		parts = append(parts, fmt.Sprintf("%d outbox intents not sent yet (retired, never sent)", r.IntentsRetired))
	}
	return strings.Join(parts, ", ")
}

// Revision is one frozen evidence of an event, without its bytes.
type Revision struct {
	EventID      string    `json:"event_id"`
	Revision     int       `json:"revision"`
	EvidenceHash string    `json:"evidence_hash"`
	Bytes        int       `json:"bytes"`
	RunID        string    `json:"run_id"`
	CreatedAt    time.Time `json:"created_at"`
}

// EventDetail is an event with every revision of its evidence.
type EventDetail struct {
	tidemark.Event
	SourceName string     `json:"source_name"`
	Revisions  []Revision `json:"revisions"`
}

// Health is a source's state at a glance, in one word.
//
// Deprecated: call tidemark.Source.Health, which has the rule; Health is
// kept for programs written against it.
func Health(src tidemark.Source) string { return src.Health() }

// WindowWords says a window's state and the attempts it has spent against
// its budget. An outage is retried past its budget until the retry policy
// makes it terminal (and a lost run then spends one more), so the attempts
// can outnumber the budget; the words then say the budget is spent rather
// than "6 of 5". Each run still carries its own attempt number.
func WindowWords(src tidemark.Source) string {
	if src.WindowAttempts > src.RetryBudget {
		if src.Window == tidemark.WindowOpen {
			return fmt.Sprintf("%s, budget of %d attempts spent; an outage is retried past it", src.Window, src.RetryBudget)
		}
		return fmt.Sprintf("%s, budget of %d attempts spent", src.Window, src.RetryBudget)
	}
	return fmt.Sprintf("%s, %d of %d attempts spent", src.Window, src.WindowAttempts, src.RetryBudget)
}

// WindowBrief is WindowWords for a table cell: "open 2/5", "open, past
// budget" for an outage retried past it, or "terminal".
func WindowBrief(src tidemark.Source) string {
	switch {
	case src.Window != tidemark.WindowOpen:
		return string(src.Window)
	case src.WindowAttempts > src.RetryBudget:
		return "open, past budget"
	}
	return fmt.Sprintf("open %d/%d", src.WindowAttempts, src.RetryBudget)
}

// NotDue says why a source is not due at any time, or "" when it is due
// at its NextDueAt: nothing claims a paused source or a terminal window
// until an operator acts, whatever its NextDueAt says (Source.DueAt).
func NotDue(src tidemark.Source) string {
	switch _, due := src.DueAt(); {
	case due:
		return ""
	case src.State == tidemark.SourcePaused:
		return "not due: paused"
	}
	return "not due: an operator must retry or skip the window"
}

// NextTryWords says when a source is next tried, for people: the time as
// the text forms show it (fieldtext.Day), or NotDue's words; why then (""
// for its schedule), with the next due time a worker's hold leaves to the
// other workers on a line of its own; and a word or two for a table cell beside the time
// ("w1 holds off", "backoff"), or "". The CLI and the console both show
// these, so they say the same as the API's next_try_at and
// next_try_reason.
func NextTryWords(src tidemark.Source) (when, why, brief string) {
	at, why, ok := src.NextTry()
	if !ok {
		return NotDue(src), "", ""
	}
	when = fieldtext.Day(at)
	switch {
	case src.Hold != nil && at.Equal(src.Hold.Until) && !at.Equal(src.NextDueAt):
		why += "\na worker that can serve it may take it from its next due time, " + fieldtext.Day(src.NextDueAt)
		brief = src.Hold.Holder + " holds off"
	case src.ClaimState == tidemark.ClaimGone:
		brief = src.ClaimHolder + " gone"
	case src.ClaimState == tidemark.ClaimExpired:
		brief = "lease expired"
	case why != "":
		brief = "backoff"
	}
	return when, why, brief
}

// ResolveRunFilter checks a run listing's filter before it is listed: an
// outcome must be one (tidemark.ErrInvalid), and every source or run it
// names must exist (tidemark.ErrNotFound naming
// it), because an empty page would say there is nothing where there is
// nothing to look at. A page position given by f.BeforeID alone (a run's
// ID, as a person copies it from a listing) is completed with that run's
// start. Every run listing (the CLI, the console, the API) resolves its
// filter here.
func ResolveRunFilter(ctx context.Context, st Store, f RunFilter) (RunFilter, error) {
	if f.Outcome != "" && !f.Outcome.Valid() {
		return f, tidemark.Invalidf("outcome", string(f.Outcome), "want one of items, empty, unreachable, invalid, error, lost")
	}
	if err := sourceExists(ctx, st, f.SourceID); err != nil {
		return f, err
	}
	if f.BeforeID == "" || !f.BeforeStartedAt.IsZero() {
		return f, nil
	}
	run, err := st.Run(ctx, f.BeforeID)
	if err != nil {
		return f, fmt.Errorf("the page after run %s: %w", f.BeforeID, err)
	}
	f.BeforeStartedAt = run.StartedAt
	return f, nil
}

// ResolveEventFilter checks an event listing's filter as ResolveRunFilter
// does a run listing's: the source, the run and the event it names must
// exist. A page position given by f.BeforeID alone is completed with that
// event's time.
func ResolveEventFilter(ctx context.Context, st Store, f EventFilter) (EventFilter, error) {
	if err := sourceExists(ctx, st, f.SourceID); err != nil {
		return f, err
	}
	if f.RunID != "" {
		if _, err := st.Run(ctx, f.RunID); err != nil {
			return f, fmt.Errorf("the events of run %s: %w", f.RunID, err)
		}
	}
	if f.BeforeID == "" || !f.BeforeOccurredAt.IsZero() {
		return f, nil
	}
	ev, err := st.Event(ctx, f.BeforeID)
	if err != nil {
		return f, fmt.Errorf("the page after event %s: %w", f.BeforeID, err)
	}
	f.BeforeOccurredAt = ev.OccurredAt
	return f, nil
}

// sourceExists checks a listing's source filter (a name or an ID; "": no
// filter).
func sourceExists(ctx context.Context, st Store, ref string) error {
	if ref == "" {
		return nil
	}
	_, err := st.Source(ctx, ref)
	return err
}
