package outbox

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/fieldtext"
	"github.com/tidemark/tidemark/outbox/provider"
)

// LaneConfig is what an operator configures of a lane. Settings are given
// whole (secrets included); the store keeps the secrets apart.
type LaneConfig struct {
	Name     string            `json:"name"`
	Provider string            `json:"provider"`
	Settings map[string]string `json:"settings"`
	// MinGap is the least time between two writes.
	MinGap tidemark.Duration `json:"min_gap"`
	// Skew is the clock difference allowed for in the freshness rule.
	Skew       tidemark.Duration `json:"skew"`
	Retirement RetirementPolicy  `json:"retirement"`
}

// LaneChange is a change to a lane's configuration; a nil field is left
// as it is. Settings are merged into the lane's (a secret given again
// replaces the one kept); Unset removes settings.
type LaneChange struct {
	Settings      map[string]string  `json:"settings,omitempty"`
	Unset         []string           `json:"unset,omitempty"`
	MinGap        *tidemark.Duration `json:"min_gap,omitempty"`
	Skew          *tidemark.Duration `json:"skew,omitempty"`
	RetireChecks  *int               `json:"retire_checks,omitempty"`
	RetireSpacing *tidemark.Duration `json:"retire_spacing,omitempty"`
}

// Empty reports whether the change changes nothing.
func (ch LaneChange) Empty() bool {
	return len(ch.Settings) == 0 && len(ch.Unset) == 0 && ch.MinGap == nil && ch.Skew == nil && ch.RetireChecks == nil && ch.RetireSpacing == nil
}

// Apply returns c changed by ch: what `lane set` stores.
func (ch LaneChange) Apply(c LaneConfig) LaneConfig {
	settings := make(map[string]string, len(c.Settings)+len(ch.Settings))
	for k, v := range c.Settings {
		settings[k] = v
	}
	for _, k := range ch.Unset {
		delete(settings, k)
	}
	for k, v := range ch.Settings {
		settings[k] = v
	}
	c.Settings = settings
	if ch.MinGap != nil {
		c.MinGap = *ch.MinGap
	}
	if ch.Skew != nil {
		c.Skew = *ch.Skew
	}
	if ch.RetireChecks != nil {
		c.Retirement.Checks = *ch.RetireChecks
	}
	if ch.RetireSpacing != nil {
		c.Retirement.Spacing = *ch.RetireSpacing
	}
	return c
}

// LaneField is one thing an operator may set on a lane besides its
// settings, by name, as text: a flag of `outbox lane add` and `lane set`,
// a field of the console's forms.
type LaneField struct {
	Name, Default, Usage string
	set                  func(ch *LaneChange, v string) error
}

// LaneFields are the lane's fields, in the order they are shown.
var LaneFields = []LaneField{
	{"min-gap", "2s", "least time between two writes (default: the provider's published rate limit, else 2s)", func(ch *LaneChange, v string) (err error) {
		ch.MinGap, err = parseDuration("min-gap", v)
		return err
	}},
	{"skew", "2s", "clock skew allowed for when judging an answer's freshness", func(ch *LaneChange, v string) (err error) {
		ch.Skew, err = parseDuration("skew", v)
		return err
	}},
	{"retire-checks", "0", "retire an intent unresolved or unexecutable through this many spaced checks (0: operators only)", func(ch *LaneChange, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return tidemark.Invalidf("retire-checks", v, "want a whole number, 0 or more")
		}
		ch.RetireChecks = &n
		return nil
	}},
	{"retire-spacing", "6h", "least time between two counted checks", func(ch *LaneChange, v string) (err error) {
		ch.RetireSpacing, err = parseDuration("retire-spacing", v)
		return err
	}},
}

func parseDuration(name, v string) (*tidemark.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return nil, tidemark.Invalidf(name, v, "want a duration such as 2s or 6h")
	}
	td := tidemark.Duration(d)
	return &td, nil
}

// ParseLaneChange reads a lane change given as text: settings as
// key=value, names of settings to remove, and each of LaneFields that
// value reports given.
func ParseLaneChange(settings, unset []string, value func(name string) (string, bool)) (LaneChange, error) {
	ch := LaneChange{Unset: unset}
	if len(settings) > 0 {
		var err error
		if ch.Settings, err = tidemark.ParseKeyValues("settings", settings); err != nil {
			return ch, err
		}
	}
	for _, f := range LaneFields {
		if v, ok := value(f.Name); ok {
			if err := f.set(&ch, v); err != nil {
				return ch, err
			}
		}
	}
	return ch, nil
}

// Validate checks what every lane needs, whatever its provider.
func (c LaneConfig) Validate() error {
	switch {
	case strings.TrimSpace(c.Name) == "" || strings.ContainsAny(c.Name, "/ \t\n"):
		return tidemark.Invalidf("lane name", c.Name, "want a name without spaces or slashes")
	case c.MinGap < 0:
		return tidemark.Invalidf("min_gap", c.MinGap.Std().String(), "cannot be negative")
	case c.Skew < 0:
		return tidemark.Invalidf("skew", c.Skew.Std().String(), "cannot be negative")
	case c.Retirement.Checks < 0 || c.Retirement.Spacing < 0:
		return tidemark.Invalidf("retire_checks", fmt.Sprint(c.Retirement.Checks), "retirement checks and spacing cannot be negative")
	}
	return nil
}

// Lane health, as the console and `outbox lanes` show it, worst first.
const (
	// HealthBroken: the lane cannot deliver: its provider cannot be built
	// (a secret kept apart is missing, a setting is wrong), or the
	// provider refuses its writes (wrong credentials, a request it cannot
	// take).
	HealthBroken = "broken"
	// HealthFailing: the lane's delivery steps fail in a row (its
	// receiver cannot be reached, a read before a write fails, a write
	// does not land or is left in doubt), until a write lands or a step
	// finds nothing it can send or decide.
	HealthFailing = "failing"
	// HealthInDoubt: an attempt is in doubt (its outcome was unknown, or
	// its writer lost the lane with it in flight); the lane reconciles
	// before it sends again.
	HealthInDoubt = "in doubt"
	// HealthUnresolved: some intents are unresolved (or unexecutable, or in
	// collision) and wait for a fresh answer, the policy or an operator.
	HealthUnresolved = "unresolved"
	HealthOK         = "ok"
)

// LaneView is a lane as people see it: with the guarantee it has with its
// settings, its health and the gaps its gate achieved.
type LaneView struct {
	Lane
	// Guarantee is nil when the lane's settings give none, or when its
	// provider cannot be built here (Problem says why).
	Guarantee *provider.LaneGuarantee `json:"guarantee"`
	Health    string                  `json:"health"`
	// Problem says why a broken lane cannot deliver (its provider cannot
	// be built, or it refused the lane's latest write), or why a failing
	// one does not (its delivery steps' latest error).
	Problem string `json:"problem"`
	// Gaps is set for every lane a store reports (a count of 0 before
	// its second send).
	Gaps *GapReport `json:"gaps,omitempty"`
	// AsOf is when the view was read: whether the next send is due.
	AsOf time.Time `json:"-"`
	// HolderGone: the lease holder is a process of this host that is no
	// longer running (ingest.Liveness), whatever its lease says.
	HolderGone bool `json:"-"`
}

// Judge sets the view's health from its lane and the error building its
// provider returned (nil: it was built).
func (v *LaneView) Judge(buildErr error) {
	attention := v.Counts[StateUnresolved] + v.Counts[StateUnexecutable] + v.Counts[StateCollision]
	switch {
	case buildErr != nil:
		v.Health, v.Problem = HealthBroken, buildErr.Error()
	case v.Refusal != "":
		v.Health, v.Problem = HealthBroken, v.Refusal+"; the lane sends nothing more until a delivery after it is fixed"
	case v.ReadRefusal != "":
		v.Health, v.Problem = HealthBroken, "a read the lane needs to decide its writes in doubt was refused: "+v.ReadRefusal+
			"; the lane sends nothing more until a reconciliation after it is fixed goes through"
	case v.Failing != nil:
		f := v.Failing
		v.Health, v.Problem = HealthFailing, fmt.Sprintf("%d delivery step(s) failed in a row since %s (the latest at %s): %s; the next delivery tries again (a write that did not land is sent again after a pause that grows to 5 minutes; one in doubt is reconciled first)",
			f.Failures, fieldtext.Day(f.Since), fieldtext.Day(f.At), f.Last)
	case v.NeedsReconcile || v.orphaned():
		v.Health = HealthInDoubt
	case attention > 0:
		v.Health = HealthUnresolved
	default:
		v.Health = HealthOK
	}
}

// orphaned reports whether the lane's write in flight has lost its
// writer: the lease is released or ran out by AsOf, or its holder's
// process is gone. No one can finish that attempt any more; the next
// writer reconciles it before it sends again.
func (v *LaneView) orphaned() bool {
	if v.InFlight == "" {
		return false
	}
	return v.HolderGone || v.LeaseExpiresAt == nil || !v.LeaseExpiresAt.After(v.AsOf)
}

// blocking are the states of intents a lane's removal would lose: not yet
// sent, or sent and not known to have landed.
var blocking = []State{StatePending, StateSending, StateUnresolved}

// LaneRemoval is what removing a lane removes.
type LaneRemoval struct {
	Lane     string        `json:"lane"`
	Intents  map[State]int `json:"intents"`
	Channels int           `json:"channels"`
	Forced   bool          `json:"forced"`
}

// Loss says, for people, what the removal loses ("" when nothing but
// history).
func (r LaneRemoval) Loss() string { return r.counts(blocking) }

// Detail is what the audit keeps of the removal.
func (r LaneRemoval) Detail() string {
	intents := r.counts(States)
	if intents == "" {
		intents = "none"
	}
	d := fmt.Sprintf("removed with %d channel(s) and intents: %s", r.Channels, intents)
	if loss := r.Loss(); loss != "" {
		d += "; forced, losing " + loss
	}
	return d
}

// counts is "2 pending, 1 unresolved": the removal's intents in states.
func (r LaneRemoval) counts(states []State) string {
	var parts []string
	for _, st := range states {
		if n := r.Intents[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return strings.Join(parts, ", ")
}

// Check refuses a removal that would lose intents still to be delivered or
// decided (pending, sending, unresolved), unless it is forced.
func (r LaneRemoval) Check() error {
	loss := r.Loss()
	if loss == "" || r.Forced {
		return nil
	}
	return tidemark.Inputf("lane %s has intents not yet delivered or decided (%s): removing it loses them and its journal, and a write in doubt is never decided; "+
		"retire them first, or remove it anyway with %s: %w", r.Lane, loss, tidemark.Input("force"), tidemark.ErrConflict)
}

// LaneAction is one audited change to a lane or its channels: who did
// what, when.
type LaneAction struct {
	Lane   string    `json:"lane"`
	Action string    `json:"action"`
	Actor  string    `json:"actor"`
	Detail string    `json:"detail"`
	At     time.Time `json:"at"`
}

// Lane and channel actions, as audited.
const (
	ActionLaneAdd       = "lane add"
	ActionLaneSet       = "lane set"
	ActionLaneRemove    = "lane remove"
	ActionChannelAdd    = "channel add"
	ActionChannelRemove = "channel remove"
	// ActionChannelTemplate is a channel's template set or reset.
	ActionChannelTemplate = "channel template"
	ActionReconcile       = "reconcile"
)

// Reconciled is what a reconciliation an operator asked for did.
type Reconciled struct {
	Lane string `json:"lane"`
	// Requests counts the provider reads it made.
	Requests int   `json:"requests"`
	Plan     *Plan `json:"plan"`
}

// WriteText writes what the reconciliation read and the plan it recorded.
func (r Reconciled) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "lane %s reconciled with %d provider request(s)\n", r.Lane, r.Requests)
	if r.Plan == nil {
		return nil
	}
	return r.Plan.WriteText(w)
}

// ChannelRef names a channel: by ID, or by what it joins.
type ChannelRef struct {
	ID     string `json:"id,omitempty"`
	Source string `json:"source,omitempty"`
	Lane   string `json:"lane,omitempty"`
	Target string `json:"target,omitempty"`
	Parent string `json:"parent,omitempty"`
}

// IntentDetail is an intent with the evidence of each check and its audit
// trail.
type IntentDetail struct {
	Intent
	Checks  []Check  `json:"checks"`
	Actions []Action `json:"actions"`
}

// ParseState checks a state given by a person ("" is every state).
func ParseState(s string) (State, error) {
	for _, st := range States {
		if string(st) == s {
			return st, nil
		}
	}
	if s == "" {
		return "", nil
	}
	return "", tidemark.Invalidf("state", s, "want one of pending, sending, landed, unresolved, unexecutable, retired, collision")
}

// Summary says, after a lane's description, the guarantee it has and,
// when it is broken, why.
func (v LaneView) Summary() string {
	var s string
	if g := v.Guarantee; g != nil {
		s = fmt.Sprintf("; %s: %s", g.Guarantee, g.Why)
	}
	if v.Health == HealthBroken {
		s += fmt.Sprintf("\nwarning: lane %s cannot deliver from here: %s", v.Name, v.Problem)
	}
	return s
}

// LaneSet is what lane set answers: the lane as it is now, and what the
// change did to its writes in doubt.
type LaneSet struct {
	LaneView
	// KeyResendLost is set when the change gave the lane another token
	// (or account) while writes sent on their idempotency key under the
	// token before are in doubt; nil otherwise.
	KeyResendLost *KeyResendLost `json:"key_resend_lost"`
}

// KeyResendLost says which writes in doubt a lane set stripped of their
// keyed resend: the server keeps idempotency keys per token or account
// (provider.KeyScoped), so under the new one a resend on the same key
// could be a second write.
type KeyResendLost struct {
	// InDoubt counts the writes in doubt sent with the token before.
	InDoubt int `json:"in_doubt"`
	// Intents names the first MaxKeyResendLostIDs of them, by rank.
	Intents []string `json:"intents"`
	// Message says what happens to them.
	Message string `json:"message"`
}

// MaxKeyResendLostIDs bounds KeyResendLost.Intents.
const MaxKeyResendLostIDs = 20

// WriteText writes the lane and, when the change stripped writes in
// doubt of their keyed resend, a warning saying so.
func (s LaneSet) WriteText(w io.Writer) error {
	if err := s.LaneView.WriteText(w); err != nil {
		return err
	}
	if k := s.KeyResendLost; k != nil {
		_, err := fmt.Fprintf(w, "\nwarning: %s\n  intents: %s\n", k.Message, strings.Join(k.Intents, " "))
		return err
	}
	return nil
}

// NewKeyResendLost says what becomes of the writes in doubt ids (by rank)
// that were sent on their key under a token the lane no longer has.
// certain is false when the lane's new token cannot be read here (its
// variable is not set in this process), so it may be the same one;
// resends is true on a lane that opted in to at least once
// (resend_in_doubt=true), which resends them anyway.
func NewKeyResendLost(ids []string, certain, resends bool) *KeyResendLost {
	if len(ids) == 0 {
		return nil
	}
	n, its := fmt.Sprintf("%d writes in doubt were", len(ids)), "their"
	if len(ids) == 1 {
		n, its = "1 write in doubt was", "its"
	}
	msg := n + " sent on " + its + " idempotency key with the lane's token before this change"
	if certain {
		msg += ", and the server keeps keys per token (or account): under the new token the same key is a new write"
	} else {
		msg += "; the new token cannot be read here, and if it is another one the server takes the same key for a new write"
	}
	if resends {
		msg += ". The lane resends writes in doubt anyway (resend_in_doubt=true), so each may be made twice"
	} else {
		msg += ". None is resent on its key: a reconciliation read of the lane's own writes decides each " +
			"(on Matrix only with rooms), and what no read can decide stays unresolved until an operator retires or revives it"
	}
	return &KeyResendLost{InDoubt: len(ids), Intents: ids[:min(len(ids), MaxKeyResendLostIDs)], Message: msg}
}
