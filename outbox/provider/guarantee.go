package provider

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
)

// Guarantee is what a lane can promise about each of its writes.
type Guarantee string

const (
	// ExactlyOnce: a write in doubt is decided by the provider itself (it
	// honours the idempotency key, so resending cannot land twice; or our
	// own writes can be read back and joined to the intents), so every
	// intent lands once. What no fresh answer can decide stays unresolved,
	// visible, and is never resent.
	ExactlyOnce Guarantee = "exactly-once"
	// AtMostOnce: nothing can tell whether a write in doubt landed, so it
	// is never resent: it stays unresolved, visible, until an operator or
	// the retirement policy decides. Never twice; a lost write is possible.
	AtMostOnce Guarantee = "at-most-once"
	// AtLeastOnce: the lane opted in (resend_in_doubt=true) to resend a
	// write in doubt that nothing could decide. Never lost; a duplicate is
	// possible.
	AtLeastOnce Guarantee = "at-least-once"
)

// ResendInDoubtSetting is the lane setting that opts in to at least once.
const ResendInDoubtSetting = "resend_in_doubt"

// Capability is one thing a provider can do for the outbox, and the lane
// settings it needs.
type Capability struct {
	// Needs are lane settings that must all be set for the capability to
	// be there; an entry "a|b" is satisfied by either. Empty: always there.
	Needs []string `json:"needs,omitempty"`
	// How says, for a person, how the provider does it.
	How string `json:"how"`
}

// Capabilities are what a provider kind can do to make a write in doubt
// decidable. They are declared once per kind, next to its code; Derive
// turns them and a lane's settings into the lane's Guarantee.
type Capabilities struct {
	// IdempotencyKey: the server honours the key derived from the intent,
	// so a write resent with it cannot land twice.
	IdempotencyKey *Capability `json:"idempotency_key,omitempty"`
	// KeyWindow is how long the server remembers a key (0: as long as
	// the write exists). A write in doubt for longer is not resent on the
	// key's strength alone.
	KeyWindow time.Duration `json:"-"`
	// ListOwn: our own writes can be listed in a stable order and joined
	// to the intents on JoinOn.
	ListOwn *Capability `json:"list_own,omitempty"`
	JoinOn  string      `json:"join_on,omitempty"`
	// Probe: one write can be looked for at its target.
	Probe *Capability `json:"probe,omitempty"`
	// Counter: a count of our writes verifies a write by subtraction
	// while the writer is alive; it cannot decide a write a crashed writer
	// left in doubt, so alone it does not make exactly once.
	Counter *Capability `json:"counter,omitempty"`
	// Freshness names the signals its read answers carry that prove how
	// old they are ("Date+Age": HTTP headers; "live session": a protocol
	// with no cache between). A read without them decides nothing.
	Freshness []string `json:"freshness"`
	// Notes are limits worth knowing (a retention, a scope).
	Notes string `json:"notes,omitempty"`
}

// LaneGuarantee is the guarantee a lane has with its settings, and why.
type LaneGuarantee struct {
	Guarantee Guarantee `json:"guarantee"`
	// By names the capabilities in force that decide a write in doubt.
	By []string `json:"by"`
	// ResendInDoubt: a write in doubt that no fresh read decided is sent
	// again (with the same idempotency key): because the server honours
	// the key, or because the lane opted in to at least once.
	ResendInDoubt bool `json:"resend_in_doubt"`
	// KeyWindow bounds a resend on the key's strength (0: none).
	KeyWindow tidemark.Duration `json:"key_window"`
	// OptedIn: the lane set resend_in_doubt=true.
	OptedIn bool `json:"opted_in"`
	// Missing lists, for a lane short of exactly once, the settings that
	// would give it (empty for the others).
	Missing []string `json:"missing"`
	Why     string   `json:"why"`
}

// Guaranteed is implemented by a provider built for a lane: the guarantee
// the lane has with its settings, which the deliverer honours.
type Guaranteed interface {
	LaneGuarantee() LaneGuarantee
}

// has reports whether a capability is in force with these settings, and
// the settings it lacks.
func (c *Capability) has(settings map[string]string) (bool, []string) {
	if c == nil {
		return false, nil
	}
	var missing []string
	for _, need := range c.Needs {
		ok := false
		for _, alt := range strings.Split(need, "|") {
			ok = ok || strings.TrimSpace(settings[alt]) != ""
		}
		if !ok {
			missing = append(missing, need)
		}
	}
	return len(missing) == 0, missing
}

// Derive is the one place a lane's guarantee comes from: the provider
// kind's capabilities and the lane's settings.
//
//   - exactly once when the server honours the idempotency key, or when our
//     own writes can be listed or probed with answers that prove their age;
//   - otherwise at most once;
//   - at least once only when the lane sets resend_in_doubt=true, and then
//     whatever it could have had: a write that no read decided is resent.
func Derive(c Capabilities, settings map[string]string) (LaneGuarantee, error) {
	optIn := false
	if v := strings.TrimSpace(settings[ResendInDoubtSetting]); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return LaneGuarantee{}, tidemark.Invalidf("setting "+ResendInDoubtSetting, v, "want true or false")
		}
		optIn = b
	}
	g := LaneGuarantee{OptedIn: optIn, By: []string{}, Missing: []string{}}
	var missing []string
	key, keyMissing := c.IdempotencyKey.has(settings)
	if key {
		g.By = append(g.By, "idempotency key")
	}
	fresh := len(c.Freshness) > 0
	byRead := false
	for _, r := range []struct {
		name string
		c    *Capability
	}{{"listing of own writes", c.ListOwn}, {"probe", c.Probe}} {
		ok, m := r.c.has(settings)
		switch {
		case ok && fresh:
			g.By = append(g.By, r.name)
			byRead = true
		case r.c != nil:
			missing = append(missing, m...)
		}
	}
	if ok, _ := c.Counter.has(settings); ok {
		g.By = append(g.By, "counter (while the writer lives)")
	}
	switch {
	case optIn:
		g.Guarantee, g.ResendInDoubt = AtLeastOnce, true
		g.Why = "resend_in_doubt=true: a write in doubt that no fresh read decided is sent again, so it may arrive twice"
	case key:
		g.Guarantee, g.ResendInDoubt, g.KeyWindow = ExactlyOnce, true, tidemark.Duration(c.KeyWindow)
		g.Why = "the server honours the idempotency key derived from the intent: a write in doubt is resent with the same key"
		if c.KeyWindow > 0 {
			g.Why += fmt.Sprintf(" within %s of its first attempt; after that only a fresh read decides it", c.KeyWindow)
		}
	case byRead:
		g.Guarantee = ExactlyOnce
		g.Why = "a write in doubt is decided by a fresh read (" + strings.Join(g.By, ", ") + "); what no fresh read decides stays unresolved, never resent"
	default:
		g.Guarantee = AtMostOnce
		g.Why = "nothing can tell whether a write in doubt landed: it is never resent, it stays unresolved"
		if !fresh && (c.ListOwn != nil || c.Probe != nil) {
			g.Why += " (its reads carry no proof of their age)"
		}
		g.Missing = append(append(g.Missing, keyMissing...), missing...)
	}
	return g, nil
}
