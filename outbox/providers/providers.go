// Package providers builds a lane's provider from its configuration: the
// one place that knows every provider kind, and so the one place that
// knows which of a kind's settings are secrets.
package providers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/provider/discord"
	"github.com/tidemark/tidemark/outbox/provider/email"
	"github.com/tidemark/tidemark/outbox/provider/github"
	"github.com/tidemark/tidemark/outbox/provider/mastodon"
	"github.com/tidemark/tidemark/outbox/provider/matrix"
	"github.com/tidemark/tidemark/outbox/provider/ntfy"
	"github.com/tidemark/tidemark/outbox/provider/slack"
	"github.com/tidemark/tidemark/outbox/provider/webhook"
	"github.com/tidemark/tidemark/redact"
)

type kind struct {
	// build returns the provider and the secrets it resolved (those read
	// from the environment included), for cleaning its errors.
	build   func(settings map[string]string, clk clock.Clock) (provider.Provider, []string, error)
	secrets provider.SecretSpec
	// caps are what the kind can do to decide a write in doubt; the
	// lane's guarantee is derived from them (provider.Derive).
	caps provider.Capabilities
	// minGap is the least time between two writes the provider's published
	// rate limits ask for (0: DefaultGap).
	minGap time.Duration
}

// DefaultGap is the gap between writes a lane of a kind that publishes no
// rate limit (the webhook) gets when it is added.
const DefaultGap = 2 * time.Second

// MinGap is the gap between writes a lane of kind gets when it is added:
// the least time its published rate limits ask for, or DefaultGap when it
// publishes none. `providers` shows the same, so what it says is what
// `lane add` does.
func MinGap(kind string) time.Duration {
	if g := kinds[kind].minGap; g > 0 {
		return g
	}
	return DefaultGap
}

// Freshness signals, as the capability table shows them.
const (
	freshAge     = "Date+Age headers"
	freshNoStore = "Cache-Control: no-store"
	freshIMAP    = "a live IMAP session (no cache between)"
)

var kinds = map[string]kind{
	"webhook": {
		build: func(s map[string]string, clk clock.Clock) (provider.Provider, []string, error) {
			c, err := webhook.FromSettings(s)
			if err != nil {
				return nil, nil, err
			}
			c.Clock = clk
			p, err := webhook.New(c)
			return p, []string{string(c.Secret)}, err
		},
		secrets: provider.SecretSpec{Keys: []string{"secret"}, OpaqueURLs: []string{"url"},
			URLs: []string{"list_url", "probe_url", "count_url", "target_url"}},
		caps: provider.Capabilities{
			ListOwn: &provider.Capability{Needs: []string{"list_url"}, How: "GET list_url: the receiver's list of our writes"},
			JoinOn:  "target+parent+body_sha256",
			Probe:   &provider.Capability{Needs: []string{"probe_url"}, How: "GET probe_url?target=&parent=&body_sha256="},
			Counter: &provider.Capability{Needs: []string{"count_url"}, How: "GET count_url"},
			// The receiver is anyone's: it may or may not honour the
			// Idempotency-Key it is sent, so the key is not counted on.
			Freshness: []string{freshAge},
			Notes:     "the receiver's read answers must carry Date and Age headers, or nothing they say is fresh",
		},
	},
	"mastodon": {
		build: func(s map[string]string, clk clock.Clock) (provider.Provider, []string, error) {
			c, err := mastodon.FromSettings(s)
			if err != nil {
				return nil, nil, err
			}
			c.Clock = clk
			p, err := mastodon.New(c)
			return p, []string{c.Token}, err
		},
		secrets: provider.SecretSpec{Keys: []string{"token"}, URLs: []string{"base_url"}},
		caps: provider.Capabilities{
			IdempotencyKey: &provider.Capability{How: "Idempotency-Key header on POST /api/v1/statuses"},
			KeyWindow:      time.Hour,
			ListOwn:        &provider.Capability{How: "GET /api/v1/accounts/:id/statuses"},
			JoinOn:         "target+parent+fingerprint of the visible text",
			Probe:          &provider.Capability{How: "the account's newest statuses"},
			Counter:        &provider.Capability{How: "statuses_count of verify_credentials"},
			Freshness:      []string{freshAge},
			Notes:          "Mastodon keeps an idempotency key for one hour",
		},
		// Mastodon allows 300 statuses every 3 hours per account.
		minGap: 36 * time.Second,
	},
	"github": {
		build: func(s map[string]string, clk clock.Clock) (provider.Provider, []string, error) {
			c, err := github.FromSettings(s)
			if err != nil {
				return nil, nil, err
			}
			c.Clock = clk
			p, err := github.New(c)
			return p, []string{c.Token}, err
		},
		secrets: provider.SecretSpec{Keys: []string{"token"}, URLs: []string{"api_url"}},
		caps: provider.Capabilities{
			ListOwn:   &provider.Capability{Needs: []string{"repos"}, How: "GET /repos/{owner}/{repo}/issues/comments, filtered to our login"},
			JoinOn:    "target+parent+body_sha256",
			Probe:     &provider.Capability{How: "GET /repos/{owner}/{repo}/issues/{n}/comments?since={first attempt − skew}, read to the end or undecided"},
			Freshness: []string{freshAge},
			Notes:     "GitHub takes no idempotency key",
		},
		// GitHub's secondary limit: at most 500 content-creating requests
		// an hour (and 80 a minute).
		minGap: 8 * time.Second,
	},
	"ntfy": {
		build: func(s map[string]string, clk clock.Clock) (provider.Provider, []string, error) {
			c, err := ntfy.FromSettings(s)
			if err != nil {
				return nil, nil, err
			}
			c.Clock = clk
			p, err := ntfy.New(c)
			return p, []string{c.Token}, err
		},
		secrets: provider.SecretSpec{Keys: []string{"token"}, URLs: []string{"base_url"}},
		caps: provider.Capabilities{
			ListOwn:   &provider.Capability{Needs: []string{"topics"}, How: "GET /{topic}/json?poll=1&since=all"},
			JoinOn:    "target+parent+SHA-256 of the trimmed message",
			Probe:     &provider.Capability{How: "GET /{topic}/json?poll=1&since=all&message={trimmed body}"},
			Freshness: []string{freshAge, freshNoStore},
			Notes:     "ntfy takes no idempotency key; it keeps messages for its cache duration (12h by default, setting cache_duration), and a write in doubt older than that stays unresolved",
		},
		minGap: ntfy.DefaultMinGap,
	},
	"discord": {
		build: func(s map[string]string, clk clock.Clock) (provider.Provider, []string, error) {
			c, err := discord.FromSettings(s)
			if err != nil {
				return nil, nil, err
			}
			c.Clock = clk
			p, err := discord.New(c)
			return p, []string{c.BotToken, c.WebhookURL}, err
		},
		secrets: provider.SecretSpec{Keys: []string{"bot_token"}, OpaqueURLs: []string{"url"}, URLs: []string{"api_url"}},
		caps: provider.Capabilities{
			ListOwn:   &provider.Capability{Needs: []string{"bot_token|bot_token_env"}, How: "GET /channels/{id}/messages with a bot token, filtered to our webhook_id"},
			JoinOn:    "target+parent+SHA-256 of the trimmed content",
			Freshness: []string{freshAge, freshNoStore},
			Notes:     "Discord webhooks take no idempotency key; without a bot token nothing can be read",
		},
		minGap: discord.DefaultMinGap,
	},
	"slack": {
		build: func(s map[string]string, clk clock.Clock) (provider.Provider, []string, error) {
			c, err := slack.FromSettings(s)
			if err != nil {
				return nil, nil, err
			}
			c.Clock = clk
			p, err := slack.New(c)
			return p, []string{c.Token}, err
		},
		secrets: provider.SecretSpec{Keys: []string{"token"}, URLs: []string{"api_url"}},
		caps: provider.Capabilities{
			ListOwn:   &provider.Capability{Needs: []string{"channels"}, How: "GET conversations.history, filtered to our bot (auth.test)"},
			JoinOn:    "target+parent+fingerprint of the text (link markup read back to text, &amp; &lt; &gt; unescaped)",
			Freshness: []string{freshNoStore},
			Notes:     "Slack takes no idempotency key; thread replies are not supported",
		},
		minGap: slack.DefaultMinGap,
	},
	"matrix": {
		build: func(s map[string]string, clk clock.Clock) (provider.Provider, []string, error) {
			c, err := matrix.FromSettings(s)
			if err != nil {
				return nil, nil, err
			}
			c.Clock = clk
			p, err := matrix.New(c)
			return p, []string{c.Token}, err
		},
		secrets: provider.SecretSpec{Keys: []string{"token"}, URLs: []string{"homeserver_url"}},
		caps: provider.Capabilities{
			IdempotencyKey: &provider.Capability{How: "the transaction id of PUT /rooms/{roomId}/send/m.room.message/{txnId}, per access token"},
			KeyWindow:      matrix.TxnWindow,
			ListOwn:        &provider.Capability{Needs: []string{"rooms"}, How: "GET /rooms/{roomId}/messages?dir=b, filtered to our user"},
			JoinOn:         "target+parent+body_sha256 of content.body",
			Freshness:      []string{freshAge, freshNoStore},
			Notes:          "homeservers keep transaction ids for about 30 minutes; after that only a listing whose answers prove their age decides (Dendrite's carry no Age and no Cache-Control: no-store, so a write in doubt for longer stays unresolved there)",
		},
		minGap: matrix.DefaultMinGap,
	},
	"email": {
		build: func(s map[string]string, clk clock.Clock) (provider.Provider, []string, error) {
			c, err := email.FromSettings(s)
			if err != nil {
				return nil, nil, err
			}
			c.Clock = clk
			p, err := email.New(c)
			return p, []string{c.Password, c.IMAPPassword}, err
		},
		secrets: provider.SecretSpec{Keys: []string{"password", "imap_password"}, URLs: []string{"smtp_url", "imap_url"}},
		caps: provider.Capabilities{
			ListOwn: &provider.Capability{Needs: []string{"imap_url"},
				How: "IMAP: the sent mailbox (sent_mailbox, default Sent) searched for our Message-IDs (derived from the intent's key)"},
			JoinOn:    "target+parent+SHA-256 of the text part (LF line breaks, no trailing ones)",
			Freshness: []string{freshIMAP},
			Notes:     "SMTP servers do not deduplicate by Message-ID; the sent mailbox must be one the submission server files what it takes into, not one a client appends its copies to",
		},
		minGap: email.DefaultMinGap,
	},
}

// secretPlaceholder stands, in CheckSettings, for a secret this machine
// does not hold.
const secretPlaceholder = "checking-settings"

// CheckSettings checks a lane's settings as its provider reads them, so that
// lane add and lane set refuse what the remote would refuse on every write
// or read (a Mastodon visibility it has not, a GitHub since that is not ISO
// 8601, a Slack channel's name for its id) rather than store a lane that
// cannot deliver. A secret kept in an environment variable this machine does
// not have (the lane may deliver from another) is not a setting's fault: the
// settings are checked as if it were there.
func CheckSettings(kind string, settings map[string]string) error {
	k, ok := kinds[kind]
	if !ok {
		return tidemark.Invalidf("provider", kind, "unknown kind (known: %v)", Kinds())
	}
	if err := k.secrets.CheckURLs(settings); err != nil {
		return err
	}
	s := maps.Clone(settings)
	if s == nil {
		s = map[string]string{}
	}
	for range len(k.secrets.Keys) + 1 {
		_, _, err := k.build(s, clock.System{})
		ie, isInvalid := errors.AsType[*tidemark.InvalidError](err)
		if !isInvalid {
			return redact.Err(err, k.secrets.Values(settings)...)
		}
		// A secret's variable that is empty here: check the rest as if it
		// held one.
		key, found := secretOfEnv(k.secrets.Keys, ie.Field)
		if !found || s[key] != "" {
			return redact.Err(err, k.secrets.Values(settings)...)
		}
		s[key] = secretPlaceholder
	}
	return nil
}

// secretOfEnv returns the secret whose environment variable setting an
// invalid field names ("setting token_env" → "token").
func secretOfEnv(keys []string, field string) (string, bool) {
	for _, k := range keys {
		if field == "setting "+k+"_env" {
			return k, true
		}
	}
	return "", false
}

// Capabilities returns what a provider kind can do to decide a write in
// doubt (false: no such kind).
func Capabilities(kind string) (provider.Capabilities, bool) {
	k, ok := kinds[kind]
	return k.caps, ok
}

// Guarantee derives the guarantee a lane has with its settings from its
// kind's capabilities: the one the deliverer honours.
func Guarantee(kind string, settings map[string]string) (provider.LaneGuarantee, error) {
	k, ok := kinds[kind]
	if !ok {
		return provider.LaneGuarantee{}, tidemark.Invalidf("provider", kind, "unknown kind (known: %v)", Kinds())
	}
	return provider.Derive(k.caps, settings)
}

// Kinds lists the provider kinds.
func Kinds() []string {
	var out []string
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Known reports whether kind is a provider kind.
func Known(kind string) bool { _, ok := kinds[kind]; return ok }

// Secrets returns the secret spec of a provider kind; an unknown kind's
// spec still treats settings named like secrets as secrets.
func Secrets(kind string) provider.SecretSpec { return kinds[kind].secrets }

// Split divides a lane's settings into the shown form and the secrets to
// keep apart (see provider.SecretSpec).
func Split(kind string, settings map[string]string) (shown, secret map[string]string) {
	return Secrets(kind).Split(settings)
}

// New builds the provider of a lane whose settings hold no secrets kept
// apart: NewWithSecrets(l, nil, clk).
func New(l outbox.Lane, clk clock.Clock) (provider.Provider, error) {
	return NewWithSecrets(l, nil, clk)
}

// ListSettings are the lane settings a kind's listing of our own writes
// needs (its ListOwn capability), such as Slack's "channels".
func ListSettings(kind string) []string {
	k, ok := kinds[kind]
	if !ok || k.caps.ListOwn == nil {
		return nil
	}
	return k.caps.ListOwn.Needs
}

// NewWithSecrets builds the provider of a lane from its shown settings and
// the secrets kept apart from them. Every error the provider returns has
// its text cleaned of those secrets (and of any the provider read from the
// environment), so an upstream that echoes a credential cannot put it in
// a log or a stored attempt.
func NewWithSecrets(l outbox.Lane, secrets map[string]string, clk clock.Clock) (provider.Provider, error) {
	k, ok := kinds[l.Provider]
	if !ok {
		return nil, tidemark.Invalidf("provider", l.Provider, "unknown kind (known: %v)", Kinds())
	}
	if clk == nil {
		clk = clock.System{}
	}
	settings := provider.Merge(l.Settings, secrets)
	for k, v := range settings {
		if strings.Contains(v, redact.Marker) {
			// The shown form reached a provider: its secret was not read.
			return nil, tidemark.Invalidf("lane "+l.Name+" setting "+k, v, "is the shown form of a secret kept apart; build the provider with the lane's secrets (LaneSecrets)")
		}
	}
	g, err := provider.Derive(k.caps, settings)
	if err != nil {
		return nil, redact.Err(err, k.secrets.Values(settings)...)
	}
	p, resolved, err := k.build(settings, clk)
	known := append(k.secrets.Values(settings), resolved...)
	if err != nil {
		return nil, redact.Err(err, known...)
	}
	r := &redacting{p: p, secrets: known, g: g}
	if fp, ok := p.(provider.Fingerprinter); ok {
		// The outbox asks for a fingerprinter; the wrapper must not hide it.
		return &redactingFingerprinter{r, fp}, nil
	}
	return r, nil
}

type redactingFingerprinter struct {
	*redacting
	provider.Fingerprinter
}

// redacting cleans the text of every error of a provider, and carries
// the lane's guarantee to the deliverer.
type redacting struct {
	p       provider.Provider
	secrets []string
	g       provider.LaneGuarantee
}

func (r *redacting) LaneGuarantee() provider.LaneGuarantee { return r.g }

// WriteBound is the provider's own bound (provider.Bounded), or 0 (the
// deliverer's default): the wrapper must not hide it.
func (r *redacting) WriteBound() time.Duration {
	if b, ok := r.p.(provider.Bounded); ok {
		return b.WriteBound()
	}
	return 0
}

// Covers says which targets the provider's listing reads
// (provider.Covering): every target, unless the provider says otherwise.
func (r *redacting) Covers(target, parent string) bool {
	if c, ok := r.p.(provider.Covering); ok {
		return c.Covers(target, parent)
	}
	return true
}

// KeyScope is the scope the provider's server keeps idempotency keys in
// (provider.KeyScoped), or "" (none a key can be trusted in): the wrapper
// must not hide it.
func (r *redacting) KeyScope() string {
	if k, ok := r.p.(provider.KeyScoped); ok {
		return k.KeyScope()
	}
	return ""
}

// ListScope is what the provider's listing reads, when it can be resumed
// (provider.Resumable), or "" (it cannot): the wrapper must not hide it.
func (r *redacting) ListScope() string {
	if rs, ok := r.p.(provider.Resumable); ok {
		return rs.ListScope()
	}
	return ""
}

func (r *redacting) err(err error) error { return redact.Err(err, r.secrets...) }

func (r *redacting) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	p, err := r.p.Post(ctx, w)
	return p, r.err(err)
}

func (r *redacting) ListOwn(ctx context.Context, q provider.ListQuery) (provider.Page, error) {
	p, err := r.p.ListOwn(ctx, q)
	return p, r.err(err)
}

func (r *redacting) Probe(ctx context.Context, w provider.Write) (provider.Probed, error) {
	p, err := r.p.Probe(ctx, w)
	return p, r.err(err)
}

func (r *redacting) Count(ctx context.Context) (int64, error) {
	n, err := r.p.Count(ctx)
	return n, r.err(err)
}

func (r *redacting) CanWrite(ctx context.Context, target, parent string) (provider.Writable, error) {
	w, err := r.p.CanWrite(ctx, target, parent)
	return w, r.err(err)
}

// KindGuarantee is one row of the capability table: what a provider kind
// can guarantee, what a lane needs for it, and how.
type KindGuarantee struct {
	Kind string `json:"kind"`
	// Best is the guarantee with every setting it can use; Default with
	// none of the optional ones.
	Best    provider.Guarantee `json:"best"`
	Default provider.Guarantee `json:"default"`
	// Needs: settings of which any one raises Default to Best.
	Needs        []string              `json:"needs"`
	Capabilities provider.Capabilities `json:"capabilities"`
	// MinGap is the gap between writes lane add gives a lane of the kind:
	// from the provider's published rate limits, else DefaultGap.
	MinGap tidemark.Duration `json:"min_gap"`
}

// Table derives, for each kind, its guarantees from its capabilities.
func Table() []KindGuarantee {
	var out []KindGuarantee
	for _, name := range Kinds() {
		c := kinds[name].caps
		def, err := provider.Derive(c, nil)
		if err != nil {
			panic(err) // no settings cannot be invalid
		}
		all := map[string]string{}
		for _, cp := range []*provider.Capability{c.IdempotencyKey, c.ListOwn, c.Probe, c.Counter} {
			if cp == nil {
				continue
			}
			for _, n := range cp.Needs {
				alt, _, _ := strings.Cut(n, "|")
				all[alt] = "set"
			}
		}
		best, err := provider.Derive(c, all)
		if err != nil {
			panic(err)
		}
		row := KindGuarantee{Kind: name, Best: best.Guarantee, Default: def.Guarantee, Needs: []string{}, Capabilities: c,
			MinGap: tidemark.Duration(MinGap(name))}
		if best.Guarantee != def.Guarantee {
			row.Needs = append(row.Needs, def.Missing...)
		}
		out = append(out, row)
	}
	return out
}

// MarkdownTable is the capability table as docs/outbox.md shows it.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| provider | guarantee | needs | a write in doubt is decided by | freshness signals | notes |\n")
	b.WriteString("|----------|-----------|-------|--------------------------------|-------------------|-------|\n")
	for _, r := range Table() {
		g := "**" + string(r.Best) + "**"
		needs := "—"
		if len(r.Needs) > 0 {
			g += " (" + string(r.Default) + " without)"
			var alts []string
			for _, n := range r.Needs {
				alts = append(alts, "`"+strings.ReplaceAll(n, "|", "` or `")+"`")
			}
			needs = "one of " + strings.Join(alts, ", ")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", r.Kind, g, needs, decidedBy(r.Capabilities),
			orDash(strings.Join(r.Capabilities.Freshness, ", ")), orDash(r.Capabilities.Notes))
	}
	return b.String()
}

func decidedBy(c provider.Capabilities) string {
	var parts []string
	add := func(name string, cp *provider.Capability) {
		if cp == nil {
			return
		}
		s := name + ": " + cp.How
		if len(cp.Needs) > 0 {
			s += " (needs `" + strings.ReplaceAll(strings.Join(cp.Needs, "`, `"), "|", "` or `") + "`)"
		}
		parts = append(parts, s)
	}
	add("idempotency key", c.IdempotencyKey)
	add("listing", c.ListOwn)
	if c.ListOwn != nil && c.JoinOn != "" {
		parts[len(parts)-1] += ", joined on " + c.JoinOn
	}
	add("probe", c.Probe)
	add("counter", c.Counter)
	return orDash(strings.Join(parts, "; "))
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return strings.ReplaceAll(s, "|", "\\|")
}
