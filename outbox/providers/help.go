package providers

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tidemark/tidemark/outbox/provider"
)

// SettingsHelp lists each provider kind's lane settings, for `outbox lane
// add` and `lane set`.
const SettingsHelp = `Settings (--setting key=value, repeatable) depend on the provider:
  webhook:  url, secret or secret_env (default TIDEMARK_WEBHOOK_SECRET),
            list_url, probe_url, count_url, target_url, page_size, timeout
  mastodon: base_url, token or token_env (default MASTODON_TOKEN), visibility,
            target, account_id, max_characters (default 500)
  github:   api_url, token or token_env (default GITHUB_TOKEN), login, repos,
            since
  discord:  url (the webhook URL), bot_token or bot_token_env (to read the
            channel: exactly once), channel_id, target, api_url
  email:    smtp_url, from, username, password or password_env, timeout;
            to read the sent mailbox (exactly once; without it at most
            once): imap_url, imap_username, imap_password or
            imap_password_env, sent_mailbox (default Sent)
  matrix:   homeserver_url, token or token_env (default MATRIX_TOKEN), rooms
            (ids, read on reconciliation), user_id
  slack:    token or token_env (default SLACK_TOKEN), channels (ids, read on
            reconciliation: exactly once), api_url
  ntfy:     base_url (default https://ntfy.sh), token or token_env (optional),
            topics (read on reconciliation), title, max_bytes, cache_duration
  every kind: resend_in_doubt=true resends a write in doubt that nothing
            could decide (at least once: it may arrive twice)

The lane's guarantee (exactly once, at most once, at least once) is derived
from what its provider can do with these settings; see
"tidemark outbox providers" and "tidemark outbox lane show".

A secret given directly (secret, token, a password or query value in a URL,
the whole path of a webhook url) is stored apart from the settings and never
shown again: the CLI, --json, the API and the status pages show ••• in its
place, and upstream errors are cleaned of it before they are logged or
stored. *_env settings name an environment variable that holds the secret
instead; only the name is stored. --setting-file key=PATH reads a value from
a file's one line (PATH - : standard input), keeping it off the command line.`

// GuaranteesHelp explains the capability table, for `outbox providers`.
const GuaranteesHelp = `List provider kinds with the delivery guarantee each can give, derived from
what the provider can do to decide a write in doubt (an idempotency key the
server honours, a listing of our own writes, a probe, a counter, and the
signals that prove a read's age):

  exactly-once   a write in doubt is decided by the provider: landed, or sent again
  at-most-once   nothing can decide it: it is never resent, it stays unresolved
  at-least-once  the lane set resend_in_doubt=true: it is sent again, maybe twice

"needs" names the lane settings of which any one raises a kind to its best
guarantee. "min gap" is the default gap between writes that lane add takes
from the provider's published rate limits, 2s where it publishes none
(--min-gap overrides it). A lane
shows the guarantee it has with its settings (lane show).`

// TableRows are the capability table's rows.
type TableRows []KindGuarantee

// WriteText writes the capability table for a terminal.
func (rows TableRows) WriteText(w io.Writer) error {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tGUARANTEE\tNEEDS\tDECIDED BY\tFRESHNESS\tMIN GAP")
	for _, r := range rows {
		g := string(r.Best)
		if r.Default != r.Best {
			g += " (" + string(r.Default) + " without)"
		}
		needs := "-"
		if len(r.Needs) > 0 {
			needs = "one of " + strings.ReplaceAll(strings.Join(r.Needs, ", "), "|", " or ")
		}
		gap := r.MinGap.Std().String()
		var by []string
		c := r.Capabilities
		for _, x := range []struct {
			name string
			c    *provider.Capability
		}{{"idempotency key", c.IdempotencyKey}, {"listing", c.ListOwn}, {"probe", c.Probe}, {"counter", c.Counter}} {
			if x.c != nil {
				by = append(by, x.name)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Kind, g, needs, dash(strings.Join(by, ", ")), dash(strings.Join(c.Freshness, ", ")), gap)
	}
	return tw.Flush()
}
