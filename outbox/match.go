package outbox

import (
	"strings"

	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/provider/slack"
)

// MatchSHA256 is what a lane of the provider kind tells two bodies apart
// by: the SHA-256 of the body as its listing gives it back. It is the
// body's own SHA-256 where the provider returns a write as sent; where it
// does not, the same fingerprint the provider joins its listing on
// (provider.Fingerprinter), so two bodies that one remote write could
// match are one identity when drafted, not a join key that is not unique
// later. Slack's is its package's own (slack.Text); the others are one
// line each, written here; a test in outbox/providers holds every kind's
// equal to its provider's.
func MatchSHA256(kind string, body []byte) string {
	s := string(body)
	switch kind {
	case "slack":
		// Slack's markup read back to text, as its listing is joined.
		s = slack.Text(s)
	case "mastodon":
		// Mastodon returns HTML: its visible words.
		s = strings.Join(strings.Fields(s), " ")
	case "discord", "ntfy":
		// Discord trims a message's content, ntfy a message.
		s = strings.TrimSpace(s)
	case "email":
		// A mail's text comes back with CRLF and a trailing line break.
		s = strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	default:
		return BodySHA256(body)
	}
	return provider.BodySHA256([]byte(s))
}
