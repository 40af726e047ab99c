// Package slack posts messages to Slack channels with the Web API's
// chat.postMessage. Slack takes no idempotency key, so the outbox's journal
// and reconciliation keep a message from being posted twice. The ordered
// read of our own writes is each configured channel's conversations.history
// (newest first) filtered to our bot (auth.test names it), paged by the
// oldest message ts each page showed (latest=): a keyset that messages
// posted or deleted since cannot move, so a read stopped part-way goes on
// from there in a later pass (provider.Resumable). Slack
// escapes &, < and > in the text it returns and wraps the links it finds
// in its link markup, so writes are matched on a fingerprint of the text
// with the markup read back to text, those unescaped and white space
// collapsed.
// Slack's answers carry Cache-Control: no-store, which proves their age.
//
// Target is a channel id (C…); there is no parent (thread replies are not
// in conversations.history). A body over 40,000 characters (Slack's limit)
// is refused unsent.
package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox/provider"
)

const (
	// MaxText is Slack's limit on a message's text, in characters.
	MaxText = 40000
	// DefaultMinGap follows chat.postMessage's limit of about one message
	// a second per channel.
	DefaultMinGap = time.Second
	pageSize      = 200
)

// Config configures a Slack lane.
type Config struct {
	APIURL   string // default https://slack.com/api
	Token    string // a bot token (xoxb-…) with chat:write and channels:history
	Channels []string
	Client   *http.Client
	Clock    clock.Clock
}

// FromSettings builds a Config from a lane's settings: token or token_env
// (default SLACK_TOKEN), channels (comma-separated ids, for
// reconciliation), api_url.
func FromSettings(s map[string]string) (Config, error) {
	st := provider.Settings(s)
	tok, err := st.Token("token", "token_env", "SLACK_TOKEN", os.Getenv)
	if err != nil {
		return Config{}, err
	}
	c := Config{APIURL: st.Get("api_url", "https://slack.com/api"), Token: tok}
	for _, ch := range strings.Split(st.Get("channels", ""), ",") {
		if ch = strings.TrimSpace(ch); ch != "" {
			c.Channels = append(c.Channels, ch)
		}
	}
	return c, nil
}

// Provider is a Slack lane.
type Provider struct {
	// Probe: Slack cannot look a message up by its text without a user
	// token (search.messages); the listing is the read.
	provider.NoProbe
	// Count: Slack has no counter of our messages.
	provider.NoCount
	c  Config
	w  *provider.WriteClient
	mu sync.Mutex
	me *identity
}

type identity struct{ userID, botID string }

var channelRE = regexp.MustCompile(`^[CGD][A-Z0-9]{2,}$`)

// New checks cfg and returns the provider.
func New(cfg Config) (*Provider, error) {
	if cfg.APIURL == "" {
		cfg.APIURL = "https://slack.com/api"
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if u, err := url.Parse(cfg.APIURL); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, tidemark.Invalidf("setting api_url", cfg.APIURL, "want https://host/api")
	}
	if cfg.Token == "" {
		return nil, tidemark.Invalidf("token", "", "a Slack lane needs a bot token")
	}
	for _, ch := range cfg.Channels {
		if !channelRE.MatchString(ch) {
			return nil, tidemark.Invalidf("setting channels", ch, "want channel ids such as C0123ABCD")
		}
	}
	w := provider.HTTPDefaults(&cfg.Client, &cfg.Clock)
	return &Provider{NoProbe: "slack", NoCount: "slack", c: cfg, w: w}, nil
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.Fingerprinter = (*Provider)(nil)
	_ provider.Resumable     = (*Provider)(nil)
)

// Fingerprint is the SHA-256 of the text's words as Slack shows them:
// Slack's link markup read back to the text it stands for (see plain),
// &amp;, &lt; and &gt; unescaped (Slack escapes them), white space
// collapsed. A text without link markup has the fingerprint it always had.
func (p *Provider) Fingerprint(body []byte) string {
	return provider.BodySHA256([]byte(Text(string(body))))
}

// Text is a message's text as Slack gives it back and the listing is
// joined on: its markup read back to text (plain), white space collapsed.
// Drafting compares bodies by it too (outbox.MatchSHA256).
func Text(s string) string { return strings.Join(strings.Fields(plain(s)), " ") }

func unescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
}

// markupRE is one of Slack's control sequences: <…> with no < or > inside
// (a < or > in the text itself is escaped as &lt; &gt;).
var markupRE = regexp.MustCompile(`<([^<>]*)>`)

// plain reads Slack's message formatting back to text, so that what was
// posted and what conversations.history returns read alike. Slack links a
// bare URL, domain or address in a posted text, and returns it as
// <https://…>, <http://example.org|example.org> or
// <mailto:a@b|a@b> (https://api.slack.com/reference/surfaces/formatting):
// a link whose label is the text it links, or with no label, is that text.
// A link with a label of its own keeps both, as a mention (<@U…>, <#C…>,
// <!here>) keeps its id and drops the label Slack may add, so texts that
// link or mention differently never read alike. <…> that is not a link or
// a mention is left as it is. Escapes are undone last, so an escaped
// &lt;…&gt; is never taken for markup.
func plain(s string) string {
	s = markupRE.ReplaceAllStringFunc(s, func(m string) string {
		target, label, labelled := strings.Cut(m[1:len(m)-1], "|")
		switch {
		case strings.HasPrefix(target, "@") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "!"):
			return "<" + target + ">"
		case !linkRE.MatchString(target):
			return m
		case !labelled:
			return target
		case autolinked(unescape(target), unescape(label)):
			return label
		default:
			return m
		}
	})
	return unescape(s)
}

// linkRE is a link target Slack makes of text: a URL or an address.
var linkRE = regexp.MustCompile(`^(?i)(https?://|mailto:)\S`)

// autolinked reports whether target is the link Slack makes of the text
// label: the URL itself, a domain with a scheme put before it, an address
// with mailto:.
func autolinked(target, label string) bool {
	for _, prefix := range []string{"", "http://", "https://", "mailto:"} {
		if target == prefix+label {
			return true
		}
	}
	return false
}

// answer is the envelope of every Web API answer.
type answer struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// unexecutable errors say the channel cannot take our message; the
// message was not posted.
var unexecutable = map[string]bool{
	"channel_not_found": true, "is_archived": true, "not_in_channel": true, "restricted_action": true,
	"restricted_action_read_only_channel": true, "restricted_action_thread_only_channel": true,
	"restricted_action_non_threadable_channel": true, "cannot_reply_to_message": true,
}

// unknown errors are Slack's own failures: the message may have been posted.
var unknown = map[string]bool{"internal_error": true, "fatal_error": true, "service_unavailable": true}

// Post implements provider.Provider: chat.postMessage.
func (p *Provider) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	if !channelRE.MatchString(w.Target) {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("target %q is not a Slack channel id", w.Target)}
	}
	if w.Parent != "" {
		return provider.Posted{}, &provider.RejectedError{Body: "thread replies are not supported: conversations.history cannot list them"}
	}
	if n := utf8.RuneCount(w.Body); n > MaxText {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("the message is %d characters; Slack takes at most %d", n, MaxText)}
	}
	body, _ := json.Marshal(map[string]any{"channel": w.Target, "text": string(w.Body), "unfurl_links": false, "unfurl_media": false})
	req, err := http.NewRequest(http.MethodPost, p.c.APIURL+"/chat.postMessage", bytes.NewReader(body))
	if err != nil {
		return provider.Posted{}, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+p.c.Token)
	ans, err := p.w.Post(ctx, p.c.Clock.Now, req)
	if err != nil {
		return provider.Posted{}, err
	}
	var a struct {
		answer
		TS string `json:"ts"`
	}
	if err := json.Unmarshal(ans, &a); err != nil {
		// A 2xx whose envelope cannot be read: ok or not, we cannot tell.
		return provider.Posted{}, &provider.UnknownError{Err: fmt.Errorf("chat.postMessage: unreadable answer: %w", err)}
	}
	switch {
	case a.OK:
		return provider.Posted{RemoteID: w.Target + "/" + a.TS, CreatedAt: tsTime(a.TS)}, nil
	case unexecutable[a.Error]:
		return provider.Posted{}, fmt.Errorf("slack: %s: %w", a.Error, provider.ErrUnexecutable)
	case unknown[a.Error]:
		return provider.Posted{}, &provider.UnknownError{Err: errors.New("chat.postMessage: " + a.Error)}
	default:
		return provider.Posted{}, &provider.RejectedError{Status: http.StatusOK, Body: a.Error}
	}
}

// tsTime reads a message ts ("1503435956.000247").
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	var s, us int64
	fmt.Sscan(sec, &s)
	if frac != "" {
		fmt.Sscan(frac, &us)
	}
	return time.Unix(s, us*1000).UTC()
}

// read GETs a Web API method and checks its envelope.
func (p *Provider) read(ctx context.Context, method string, q url.Values, v any) (provider.Meta, error) {
	req, err := http.NewRequest(http.MethodGet, p.c.APIURL+"/"+method+"?"+q.Encode(), nil)
	if err != nil {
		return provider.Meta{}, err
	}
	req.Header.Set("Authorization", "Bearer "+p.c.Token)
	meta, _, body, err := provider.GetBody(ctx, p.c.Client, p.c.Clock.Now, req)
	if err != nil {
		return meta, err
	}
	var a struct {
		answer
		Needed   string `json:"needed"`
		Provided string `json:"provided"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return meta, fmt.Errorf("slack: %s: decode: %w", method, err)
	}
	if !a.OK {
		return meta, readError(method, q.Get("channel"), a.Error, a.Needed, a.Provided)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return meta, fmt.Errorf("slack: %s: decode: %w", method, err)
	}
	return meta, nil
}

// readError is what an ok:false answer to a read means. Slack's own
// failures are unavailability; any other error is the lane's (a token
// without the scope, a bot not in the channel, a token revoked): every
// read is refused the same until the lane is fixed, so it is a
// provider.ReadRefusedError that says what to fix.
func readError(method, channel, code, needed, provided string) error {
	if unknown[code] || code == "ratelimited" || code == "request_timeout" {
		return fmt.Errorf("slack: %s: %s: %w", method, code, tidemark.ErrUnavailable)
	}
	op := "slack " + method
	if channel != "" {
		op += " of channel " + channel
	}
	reason := code
	switch code {
	case "missing_scope":
		reason = fmt.Sprintf("missing_scope: the token lacks the scope %s (it has %s)", needed, provided)
	case "not_in_channel":
		reason = "not_in_channel: invite the bot to the channel, or take it out of the lane's channels"
	case "channel_not_found":
		reason = "channel_not_found: the token cannot see the channel (a private one needs groups:history and the bot invited), or take it out of the lane's channels"
	}
	return &provider.ReadRefusedError{Op: op, Reason: reason}
}

func (p *Provider) identity(ctx context.Context) (identity, error) {
	p.mu.Lock()
	me := p.me
	p.mu.Unlock()
	if me != nil {
		return *me, nil
	}
	var a struct {
		UserID string `json:"user_id"`
		BotID  string `json:"bot_id"`
	}
	if _, err := p.read(ctx, "auth.test", url.Values{}, &a); err != nil {
		return identity{}, err
	}
	if a.UserID == "" && a.BotID == "" {
		return identity{}, errors.New("slack: auth.test named no user and no bot")
	}
	id := identity{userID: a.UserID, botID: a.BotID}
	p.mu.Lock()
	p.me = &id
	p.mu.Unlock()
	return id, nil
}

type message struct {
	Type  string `json:"type"`
	User  string `json:"user"`
	BotID string `json:"bot_id"`
	Text  string `json:"text"`
	TS    string `json:"ts"`
}

// Covers implements provider.Covering: the listing reads the channels
// the lane names, and no other.
func (p *Provider) Covers(target, _ string) bool { return slices.Contains(p.c.Channels, target) }

// ListScope implements provider.Resumable: the listing's cursor is a
// channel's index among the lane's channels and the ts of the oldest
// message read there, a keyset that messages posted or deleted since do
// not move (a ts is unique in its channel), where Slack's own cursor is
// opaque, with no promise of how long it lasts.
func (p *Provider) ListScope() string {
	if len(p.c.Channels) == 0 {
		return "" // nothing to list
	}
	return provider.ScopeDigest("slack", p.c.APIURL, p.c.Token, strings.Join(p.c.Channels, ","))
}

// tsRE is a message ts as Slack gives it: seconds, a dot, microseconds.
var tsRE = regexp.MustCompile(`^[0-9]+\.[0-9]{6}$`)

// ListOwn implements provider.Provider: each configured channel's
// conversations.history, newest first, filtered to our bot. The cursor is
// "channel-index" or "channel-index|ts": the channel's messages older
// than ts are read next (latest=ts), the page before having shown every
// message from ts on.
func (p *Provider) ListOwn(ctx context.Context, lq provider.ListQuery) (provider.Page, error) {
	cursor := lq.Cursor
	if len(p.c.Channels) == 0 {
		return provider.Page{}, fmt.Errorf("slack: no channels configured to list: %w", provider.ErrUnsupported)
	}
	me, err := p.identity(ctx)
	if err != nil {
		return provider.Page{}, err
	}
	at, err := provider.ParsePageTargets("slack", cursor, len(p.c.Channels))
	if err != nil {
		return provider.Page{}, err
	}
	latest := at.Token
	if latest != "" && !tsRE.MatchString(latest) {
		return provider.Page{}, fmt.Errorf("slack: bad cursor %q: not a message ts", cursor)
	}
	ch := p.c.Channels[at.Index]
	q := url.Values{"channel": {ch}, "limit": {fmt.Sprint(pageSize)}}
	if latest != "" {
		q.Set("latest", latest)
	}
	if !lq.Since.IsZero() {
		// Slack's own filter: only messages from then on.
		q.Set("oldest", fmt.Sprintf("%d.%06d", lq.Since.Unix(), lq.Since.Nanosecond()/1000))
	}
	if q.Has("latest") || q.Has("oldest") {
		// inclusive is one flag for both bounds: oldest's message is
		// wanted, and latest's, shown by the page before, is left out
		// below.
		q.Set("inclusive", "true")
	}
	var h struct {
		Messages []message `json:"messages"`
		HasMore  bool      `json:"has_more"`
	}
	meta, err := p.read(ctx, "conversations.history", q, &h)
	if err != nil {
		return provider.Page{}, err
	}
	page := provider.Page{Meta: meta}
	oldest := ""
	for _, m := range h.Messages {
		if !tsRE.MatchString(m.TS) {
			return provider.Page{}, fmt.Errorf("slack: conversations.history of channel %s: a message's ts %q is not one", ch, m.TS)
		}
		if latest != "" && !tsBefore(m.TS, latest) {
			continue // the page before showed it
		}
		if oldest == "" || tsBefore(m.TS, oldest) {
			oldest = m.TS
		}
		ours := (me.botID != "" && m.BotID == me.botID) || (m.BotID == "" && me.userID != "" && m.User == me.userID)
		if m.Type != "message" || !ours {
			continue
		}
		page.Writes = append(page.Writes, provider.OwnWrite{RemoteID: ch + "/" + m.TS, CreatedAt: tsTime(m.TS), Target: ch,
			HasParent: true, BodySHA256: p.Fingerprint([]byte(m.Text))})
	}
	if h.HasMore && oldest == "" {
		// Going on would ask for the same page again.
		return provider.Page{}, fmt.Errorf("slack: conversations.history of channel %s says it has more, but showed no message older than %q", ch, latest)
	}
	page.Next = at.Next(h.HasMore, oldest)
	return page, nil
}

// tsBefore reports whether message ts a is older than b (both as tsRE).
func tsBefore(a, b string) bool {
	as, au, _ := strings.Cut(a, ".")
	bs, bu, _ := strings.Cut(b, ".")
	if len(as) != len(bs) {
		return len(as) < len(bs)
	}
	return as+au < bs+bu
}

// CanWrite implements provider.Provider: a channel id; an archived or
// missing channel is found out by the post (its error buckets the intent).
func (p *Provider) CanWrite(ctx context.Context, target, parent string) (provider.Writable, error) {
	if !channelRE.MatchString(target) {
		return provider.Writable{Reason: fmt.Sprintf("target %q is not a Slack channel id: give the channel's id (C…, G… or D…, "+
			"shown at the bottom of the channel's details in Slack), not its name", target)}, nil
	}
	return provider.Writable{OK: true}, nil
}
