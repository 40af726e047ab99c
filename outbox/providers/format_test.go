package providers_test

import (
	"testing"

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
		"github":   {github.MaxCommentCharacters, 0},
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

// Drafting tells two bodies apart as the provider's listing can: by the
// fingerprint a Fingerprinter joins on, else the body's SHA-256.
func TestMatchSHA256IsTheProvidersFingerprint(t *testing.T) {
	bodies := []string{"Deploy finished", "Deploy  finished", " Deploy\tfinished\n", "a &amp; b &lt;c&gt;", "a & b <c>",
		"line\r\nline\r\n\r\n", "line\nline", "*bold* @\u200beveryone\n\n<https://x.example/|src>", "", "\n",
		"see <https://example.org/a?b=1&amp;c=2>", "see https://example.org/a?b=1&c=2"}
	provs := map[string]any{"slack": new(slack.Provider), "mastodon": new(mastodon.Provider), "discord": new(discord.Provider),
		"email": new(email.Provider), "github": new(github.Provider), "matrix": new(matrix.Provider), "ntfy": new(ntfy.Provider),
		"webhook": new(webhook.Provider)}
	for _, kind := range providers.Kinds() {
		p, ok := provs[kind]
		if !ok {
			t.Errorf("provider kind %s: add it to this test", kind)
		}
		for _, b := range bodies {
			want := outbox.BodySHA256([]byte(b))
			if fp, ok := p.(provider.Fingerprinter); ok {
				want = fp.Fingerprint([]byte(b))
			}
			if got := outbox.MatchSHA256(kind, []byte(b)); got != want {
				t.Errorf("%s, %q: drafting matches on %s, the provider joins on %s", kind, b, got[:12], want[:12])
			}
		}
	}
}
