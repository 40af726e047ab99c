// Package discord posts messages to a Discord channel through a webhook
// (POST /webhooks/{id}/{token}?wait=true, which answers with the message it
// made). Discord takes no idempotency key for webhooks, so the outbox's
// journal and reconciliation keep a message from being posted twice. With a
// bot token that can read the channel, the ordered read of our own writes
// is the channel's messages (GET /channels/{id}/messages, newest first)
// whose webhook_id is ours; Discord returns content as sent but trimmed, so
// writes are matched on the SHA-256 of the trimmed body (Fingerprint). Without a bot token nothing can be read:
// a write in doubt stays unresolved (at most once).
//
// Target is the lane's channel name (setting "target", default "channel");
// there is no parent. A body over 2000 characters (Discord's content limit)
// is refused unsent.
package discord

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
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox/provider"
)

const (
	// MaxContent is Discord's limit on a message's content, in characters.
	MaxContent = 2000
	// DefaultMinGap keeps a webhook under Discord's limit of 30 messages a
	// minute to one channel.
	DefaultMinGap = 2 * time.Second
	pageSize      = 100
)

// Config configures a Discord lane.
type Config struct {
	// WebhookURL is https://discord.com/api/webhooks/{id}/{token}.
	WebhookURL string
	// BotToken, with ChannelID, lets the channel's messages be read.
	BotToken  string
	ChannelID string
	// APIURL is the REST base the reads use (default https://discord.com/api/v10).
	APIURL string
	Target string
	Client *http.Client
	Clock  clock.Clock
}

// FromSettings builds a Config from a lane's settings: url (the webhook
// URL), bot_token or bot_token_env (optional), channel_id, api_url, target.
func FromSettings(s map[string]string) (Config, error) {
	st := provider.Settings(s)
	c := Config{WebhookURL: s["url"], ChannelID: s["channel_id"], APIURL: st.Get("api_url", "https://discord.com/api/v10"), Target: st.Get("target", "channel")}
	if s["bot_token"] != "" || s["bot_token_env"] != "" {
		tok, err := st.Token("bot_token", "bot_token_env", "DISCORD_BOT_TOKEN", os.Getenv)
		if err != nil {
			return c, err
		}
		c.BotToken = tok
	}
	return c, nil
}

// Provider is a Discord lane.
type Provider struct {
	// Probe: Discord cannot look up a message by its content, and the
	// listing is the read.
	provider.NoProbe
	// Count: Discord has no counter of our messages.
	provider.NoCount
	c         Config
	w         *provider.WriteClient
	webhookID string

	mu      sync.Mutex
	channel string
}

var hookRE = regexp.MustCompile(`/webhooks/([0-9]+)/[^/?]+$`)

// New checks cfg and returns the provider.
func New(cfg Config) (*Provider, error) {
	u, err := url.Parse(cfg.WebhookURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, tidemark.Invalidf("setting url", redactHook(cfg.WebhookURL), "want the webhook URL https://discord.com/api/webhooks/{id}/{token}")
	}
	m := hookRE.FindStringSubmatch(u.Path)
	if m == nil || u.RawQuery != "" {
		return nil, tidemark.Invalidf("setting url", redactHook(cfg.WebhookURL), "want the webhook URL https://discord.com/api/webhooks/{id}/{token}, without a query")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = "https://discord.com/api/v10"
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.Target == "" {
		cfg.Target = "channel"
	}
	w := provider.HTTPDefaults(&cfg.Client, &cfg.Clock)
	return &Provider{NoProbe: "discord", NoCount: "discord", c: cfg, w: w, webhookID: m[1], channel: cfg.ChannelID}, nil
}

func redactHook(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Scheme + "://" + u.Host + "/…"
	}
	return "…"
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.Fingerprinter = (*Provider)(nil)
)

// Fingerprint is the SHA-256 of the body without leading and trailing
// white space, which Discord trims from a message's content.
func (p *Provider) Fingerprint(body []byte) string {
	return provider.BodySHA256(bytes.TrimSpace(body))
}

type message struct {
	ID        string    `json:"id"`
	ChannelID string    `json:"channel_id"`
	Content   string    `json:"content"`
	Timestamp time.Time `json:"timestamp"`
	WebhookID string    `json:"webhook_id"`
}

// Post implements provider.Provider: execute the webhook with wait=true,
// so the answer is the message made (or an error that says it was not).
func (p *Provider) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	if w.Target != p.c.Target {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("target %q is not this lane's %q", w.Target, p.c.Target)}
	}
	if w.Parent != "" {
		return provider.Posted{}, &provider.RejectedError{Body: "Discord webhook messages have no parent"}
	}
	if n := utf8.RuneCount(w.Body); n > MaxContent {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("the message is %d characters; Discord takes at most %d", n, MaxContent)}
	}
	body, _ := json.Marshal(map[string]any{"content": string(w.Body), "allowed_mentions": map[string]any{"parse": []string{}}})
	req, err := http.NewRequest(http.MethodPost, p.c.WebhookURL+"?wait=true", bytes.NewReader(body))
	if err != nil {
		return provider.Posted{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	ans, err := p.w.Post(ctx, p.c.Clock.Now, req)
	if err != nil {
		return provider.Posted{}, laneRefusal(err)
	}
	var m message
	if err := json.Unmarshal(ans, &m); err != nil {
		return provider.Posted{}, nil // it landed; its id is unreadable
	}
	if m.ChannelID != "" {
		p.mu.Lock()
		if p.channel == "" {
			p.channel = m.ChannelID
		}
		p.mu.Unlock()
	}
	return provider.Posted{RemoteID: m.ID, CreatedAt: m.Timestamp}, nil
}

// Discord's JSON error codes that say the webhook itself, the lane's
// credential, is gone or wrong.
const (
	codeUnknownWebhook      = 10015
	codeInvalidWebhookToken = 50027
)

// laneRefusal turns Discord's answer that the webhook is gone (404 Unknown
// Webhook) or its token wrong (Invalid Webhook Token) into a refusal of
// the lane's request: every write on the lane would be answered the same,
// so it is not a verdict on one intent's target.
func laneRefusal(err error) error {
	var ue *provider.UnexecutableError
	if !errors.As(err, &ue) {
		return err
	}
	var e struct {
		Code int `json:"code"`
	}
	if json.Unmarshal([]byte(ue.Body), &e) != nil {
		return err
	}
	switch e.Code {
	case codeUnknownWebhook:
		return &provider.RejectedError{Status: ue.Status, Body: "the webhook is gone: set the lane's url to a live one: " + ue.Body}
	case codeInvalidWebhookToken:
		return &provider.RejectedError{Status: ue.Status, Body: "the webhook's token is wrong: set the lane's url: " + ue.Body}
	}
	return err
}

// channelID is the webhook's channel: the setting, or what the webhook
// says of itself (GET on its URL needs no other credential).
func (p *Provider) channelID(ctx context.Context) (string, error) {
	p.mu.Lock()
	id := p.channel
	p.mu.Unlock()
	if id != "" {
		return id, nil
	}
	req, err := http.NewRequest(http.MethodGet, p.c.WebhookURL, nil)
	if err != nil {
		return "", err
	}
	var hook struct {
		ChannelID string `json:"channel_id"`
	}
	if _, _, err := provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, req, &hook); err != nil {
		return "", err
	}
	if hook.ChannelID == "" {
		return "", fmt.Errorf("discord: the webhook did not name its channel")
	}
	p.mu.Lock()
	p.channel = hook.ChannelID
	p.mu.Unlock()
	return hook.ChannelID, nil
}

// ListScope implements provider.Resumable: the listing's cursor is a
// message id (before), a keyset that messages posted or deleted since do
// not move.
func (p *Provider) ListScope() string {
	if p.c.BotToken == "" {
		return "" // nothing to list
	}
	return provider.ScopeDigest("discord", p.c.APIURL, p.c.WebhookURL, p.c.BotToken, p.c.ChannelID)
}

// ListOwn implements provider.Provider: the channel's messages, newest
// first, paginated with before=, filtered to our webhook. It needs a bot
// token that may read the channel.
func (p *Provider) ListOwn(ctx context.Context, lq provider.ListQuery) (provider.Page, error) {
	cursor := lq.Cursor
	if p.c.BotToken == "" {
		return provider.Page{}, fmt.Errorf("discord: no bot_token to read the channel: %w", provider.ErrUnsupported)
	}
	ch, err := p.channelID(ctx)
	if err != nil {
		return provider.Page{}, err
	}
	q := url.Values{"limit": {fmt.Sprint(pageSize)}}
	if cursor != "" {
		q.Set("before", cursor)
	}
	req, err := http.NewRequest(http.MethodGet, p.c.APIURL+"/channels/"+url.PathEscape(ch)+"/messages?"+q.Encode(), nil)
	if err != nil {
		return provider.Page{}, err
	}
	req.Header.Set("Authorization", "Bot "+p.c.BotToken)
	var ms []message
	meta, _, err := provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, req, &ms)
	if err != nil {
		return provider.Page{}, err
	}
	page := provider.Page{Meta: meta}
	for _, m := range ms {
		if m.WebhookID != p.webhookID {
			continue
		}
		page.Writes = append(page.Writes, provider.OwnWrite{RemoteID: m.ID, CreatedAt: m.Timestamp, Target: p.c.Target,
			HasParent: true, BodySHA256: p.Fingerprint([]byte(m.Content))})
	}
	if len(ms) == pageSize && !ms[len(ms)-1].Timestamp.Before(lq.Since) {
		// Newest first: past a message older than Since, all are.
		page.Next = ms[len(ms)-1].ID
	}
	return page, nil
}

// CanWrite implements provider.Provider: the lane's one target; a deleted
// webhook answers the post with 404 and the intent is bucketed then.
func (p *Provider) CanWrite(ctx context.Context, target, parent string) (provider.Writable, error) {
	if target != p.c.Target {
		return provider.Writable{Reason: fmt.Sprintf("target %q is not this lane's %q: a Discord lane writes to its webhook's one "+
			"channel, named by its target setting (default \"channel\"); for another channel, add a lane with that channel's webhook", target, p.c.Target)}, nil
	}
	return provider.Writable{OK: true}, nil
}
