package providers_test

import (
	"testing"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider/discord"
	"github.com/tidemark/tidemark/outbox/provider/email"
	"github.com/tidemark/tidemark/outbox/provider/mastodon"
	"github.com/tidemark/tidemark/outbox/provider/matrix"
	"github.com/tidemark/tidemark/outbox/provider/ntfy"
	"github.com/tidemark/tidemark/outbox/provider/slack"
	"github.com/tidemark/tidemark/outbox/providers"
)

// Every provider kind has a format, and the limits the outbox fits bodies
// to are the ones its provider refuses a longer body by.
func TestEveryKindHasAFormatWithItsProvidersLimit(t *testing.T) {
	for _, kind := range providers.Kinds() {
		if _, ok := outbox.FormatOf(kind); !ok {
			t.Errorf("provider kind %s has no format", kind)
		}
	}
	for kind, want := range map[string][2]int{
		"matrix":   {0, matrix.MaxBodyBytes},
		"email":    {0, email.MaxBodyBytes},
		"slack":    {slack.MaxText, 0},
		"discord":  {discord.MaxContent, 0},
		"ntfy":     {0, ntfy.DefaultMaxBytes},
		"mastodon": {mastodon.MaxCharacters, 0},
	} {
		f, _ := outbox.FormatOf(kind)
		if f.MaxRunes != want[0] || f.MaxBytes != want[1] {
			t.Errorf("%s: the outbox fits bodies to %d characters / %d bytes, the provider takes %d / %d", kind, f.MaxRunes, f.MaxBytes, want[0], want[1])
		}
	}
	if f, _ := outbox.FormatOf("mastodon"); f.URLRunes != mastodon.URLCharacters {
		t.Errorf("mastodon: the outbox counts a link as %d characters, the provider as %d", f.URLRunes, mastodon.URLCharacters)
	}
}
