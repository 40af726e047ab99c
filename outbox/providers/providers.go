// Package providers builds a lane's provider from its configuration: the
// one place that knows every provider kind.
package providers

import (
	"sort"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/provider/github"
	"github.com/tidemark/tidemark/outbox/provider/mastodon"
	"github.com/tidemark/tidemark/outbox/provider/webhook"
)

var kinds = map[string]func(settings map[string]string, clk clock.Clock) (provider.Provider, error){
	"webhook": func(s map[string]string, clk clock.Clock) (provider.Provider, error) {
		c, err := webhook.FromSettings(s)
		if err != nil {
			return nil, err
		}
		c.Clock = clk
		return webhook.New(c)
	},
	"mastodon": func(s map[string]string, clk clock.Clock) (provider.Provider, error) {
		c, err := mastodon.FromSettings(s)
		if err != nil {
			return nil, err
		}
		c.Clock = clk
		return mastodon.New(c)
	},
	"github": func(s map[string]string, clk clock.Clock) (provider.Provider, error) {
		c, err := github.FromSettings(s)
		if err != nil {
			return nil, err
		}
		c.Clock = clk
		return github.New(c)
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

// New builds the provider of a lane.
func New(l outbox.Lane, clk clock.Clock) (provider.Provider, error) {
	f, ok := kinds[l.Provider]
	if !ok {
		return nil, tidemark.Invalidf("provider", l.Provider, "unknown kind (known: %v)", Kinds())
	}
	if clk == nil {
		clk = clock.System{}
	}
	return f(l.Settings, clk)
}
