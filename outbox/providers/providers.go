// Package providers builds a lane's provider from its configuration: the
// one place that knows every provider kind, and so the one place that
// knows which of a kind's settings are secrets.
package providers

import (
	"context"
	"sort"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/provider/github"
	"github.com/tidemark/tidemark/outbox/provider/mastodon"
	"github.com/tidemark/tidemark/outbox/provider/webhook"
	"github.com/tidemark/tidemark/redact"
)

type kind struct {
	// build returns the provider and the secrets it resolved (those read
	// from the environment included), for cleaning its errors.
	build   func(settings map[string]string, clk clock.Clock) (provider.Provider, []string, error)
	secrets provider.SecretSpec
}

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
	},
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
	p, resolved, err := k.build(settings, clk)
	known := append(k.secrets.Values(settings), resolved...)
	if err != nil {
		return nil, redact.Err(err, known...)
	}
	r := &redacting{p: p, secrets: known}
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

// redacting cleans the text of every error of a provider.
type redacting struct {
	p       provider.Provider
	secrets []string
}

func (r *redacting) err(err error) error { return redact.Err(err, r.secrets...) }

func (r *redacting) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	p, err := r.p.Post(ctx, w)
	return p, r.err(err)
}

func (r *redacting) ListOwn(ctx context.Context, cursor string) (provider.Page, error) {
	p, err := r.p.ListOwn(ctx, cursor)
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
