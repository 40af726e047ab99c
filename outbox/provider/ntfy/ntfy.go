// Package ntfy publishes messages to ntfy topics (https://docs.ntfy.sh).
//
// ntfy takes no idempotency key and gives each message a random id, so the
// outbox's journal and reconciliation keep a message from being published
// twice. The ordered read of our own writes is each configured topic's poll
// API (GET /<topic>/json?poll=1&since=all, messages oldest first); ntfy
// keeps and returns a message's text as sent but trimmed of surrounding
// white space, so writes are matched on the SHA-256 of the trimmed body
// (Fingerprint). A probe asks the same API for one exact message
// (message=…, trimmed too).
//
// ntfy keeps messages only for its cache duration (12 hours by default):
// a listing cannot show a message older than that, so it says so (the
// page's horizon) and an attempt in doubt from before it stays unresolved
// rather than being sent again.
//
// Target is the topic; parent is unused. A message longer than ntfy's
// limit (4096 bytes by default) would be turned into an attachment or
// refused, so it is refused before it is sent.
package ntfy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox/provider"
)

// Defaults of ntfy's server (server.yml).
const (
	DefaultBaseURL       = "https://ntfy.sh"
	DefaultMaxBytes      = 4096
	DefaultCacheDuration = 12 * time.Hour
	// DefaultMinGap follows ntfy.sh's visitor limit: a burst of 60, then
	// one request every 5 seconds.
	DefaultMinGap = 5 * time.Second
)

// Config configures an ntfy lane.
type Config struct {
	BaseURL string
	// Token is an access token (tk_…) or empty for a public topic.
	Token string
	// Topics are read on reconciliation.
	Topics        []string
	Title         string
	MaxBytes      int
	CacheDuration time.Duration
	Client        *http.Client
	Clock         clock.Clock
}

// FromSettings builds a Config from a lane's settings: base_url (default
// https://ntfy.sh), token or token_env (optional: public topics need none),
// topics (comma-separated, for reconciliation), title, max_bytes,
// cache_duration.
func FromSettings(s map[string]string) (Config, error) {
	st := provider.Settings(s)
	c := Config{BaseURL: st.Get("base_url", DefaultBaseURL), Title: st.Get("title", "")}
	if s["token"] != "" || s["token_env"] != "" {
		tok, err := st.Token("token", "token_env", "NTFY_TOKEN", os.Getenv)
		if err != nil {
			return c, err
		}
		c.Token = tok
	}
	for _, t := range strings.Split(st.Get("topics", ""), ",") {
		if t = strings.TrimSpace(t); t != "" {
			c.Topics = append(c.Topics, t)
		}
	}
	if v := s["max_bytes"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return c, tidemark.Invalidf("setting max_bytes", v, "want a positive number of bytes")
		}
		c.MaxBytes = n
	}
	if v := s["cache_duration"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, tidemark.Invalidf("setting cache_duration", v, "want a positive duration (the server's cache-duration)")
		}
		c.CacheDuration = d
	}
	return c, nil
}

// Provider is an ntfy lane.
type Provider struct {
	// Count: ntfy has no counter of our messages.
	provider.NoCount
	c Config
	w *provider.WriteClient
}

var topicRE = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

// New checks cfg and returns the provider.
func New(cfg Config) (*Provider, error) {
	if u, err := url.Parse(cfg.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, tidemark.Invalidf("setting base_url", cfg.BaseURL, "want https://host")
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	for _, t := range cfg.Topics {
		if !topicRE.MatchString(t) {
			return nil, tidemark.Invalidf("setting topics", t, "an ntfy topic is 1 to 64 letters, digits, - and _")
		}
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.CacheDuration <= 0 {
		cfg.CacheDuration = DefaultCacheDuration
	}
	w := provider.HTTPDefaults(&cfg.Client, &cfg.Clock)
	return &Provider{NoCount: "ntfy", c: cfg, w: w}, nil
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.Fingerprinter = (*Provider)(nil)
)

// Fingerprint is the SHA-256 of the body without leading and trailing
// white space: ntfy keeps (and returns) the message trimmed, so a body
// with white space around it is still ours.
func (p *Provider) Fingerprint(body []byte) string {
	return provider.BodySHA256(bytes.TrimSpace(body))
}

type message struct {
	ID      string `json:"id"`
	Time    int64  `json:"time"`
	Event   string `json:"event"`
	Topic   string `json:"topic"`
	Message string `json:"message"`
}

func (p *Provider) auth(req *http.Request) {
	if p.c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.c.Token)
	}
}

// Post implements provider.Provider: POST /<topic> with the body as the
// message.
func (p *Provider) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	if !topicRE.MatchString(w.Target) {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("target %q is not an ntfy topic", w.Target)}
	}
	if w.Parent != "" {
		return provider.Posted{}, &provider.RejectedError{Body: "ntfy messages have no parent"}
	}
	if len(w.Body) > p.c.MaxBytes {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("the message is %d bytes; ntfy takes at most %d (max_bytes)", len(w.Body), p.c.MaxBytes)}
	}
	req, err := http.NewRequest(http.MethodPost, p.c.BaseURL+"/"+w.Target, bytes.NewReader(w.Body))
	if err != nil {
		return provider.Posted{}, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	if p.c.Title != "" {
		req.Header.Set("X-Title", p.c.Title)
	}
	p.auth(req)
	ans, err := p.w.Post(ctx, p.c.Clock.Now, req)
	if err != nil {
		return provider.Posted{}, err
	}
	var m message
	if err := json.Unmarshal(ans, &m); err != nil {
		return provider.Posted{}, nil // it landed; its id is unreadable
	}
	return provider.Posted{RemoteID: m.ID, CreatedAt: time.Unix(m.Time, 0).UTC()}, nil
}

// poll reads a topic's cached messages, oldest first (newline-delimited
// JSON, one message a line).
func (p *Provider) poll(ctx context.Context, topic string, q url.Values) ([]message, provider.Meta, error) {
	q.Set("poll", "1")
	if q.Get("since") == "" {
		q.Set("since", "all")
	}
	req, err := http.NewRequest(http.MethodGet, p.c.BaseURL+"/"+url.PathEscape(topic)+"/json?"+q.Encode(), nil)
	if err != nil {
		return nil, provider.Meta{}, err
	}
	p.auth(req)
	meta, _, body, err := provider.GetBody(ctx, p.c.Client, p.c.Clock.Now, req)
	if err != nil {
		return nil, meta, err
	}
	var out []message
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), provider.MaxResponseBytes)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, meta, fmt.Errorf("ntfy: poll %s: decode: %w", topic, err)
		}
		if m.Event == "message" {
			out = append(out, m)
		}
	}
	return out, meta, sc.Err()
}

func (p *Provider) own(m message) provider.OwnWrite {
	return provider.OwnWrite{RemoteID: m.ID, CreatedAt: time.Unix(m.Time, 0).UTC(), Target: m.Topic, HasParent: true,
		BodySHA256: p.Fingerprint([]byte(m.Message))}
}

// Covers implements provider.Covering: the listing reads the topics the
// lane names, and no other.
func (p *Provider) Covers(target, _ string) bool { return slices.Contains(p.c.Topics, target) }

// ListScope implements provider.Resumable: the listing's cursor is a
// topic's index among topics, each read whole in one poll.
func (p *Provider) ListScope() string {
	if len(p.c.Topics) == 0 {
		return "" // nothing to list
	}
	return provider.ScopeDigest("ntfy", p.c.BaseURL, p.c.Token, strings.Join(p.c.Topics, ","))
}

// ListOwn implements provider.Provider: each configured topic's cached
// messages, one topic a page. Anyone who may publish to a topic writes
// into this listing too; their messages match no intent (unless they are
// our text, to the byte but for surrounding white space).
func (p *Provider) ListOwn(ctx context.Context, lq provider.ListQuery) (provider.Page, error) {
	cursor := lq.Cursor
	if len(p.c.Topics) == 0 {
		return provider.Page{}, fmt.Errorf("ntfy: no topics configured to list: %w", provider.ErrUnsupported)
	}
	idx := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 || n >= len(p.c.Topics) {
			return provider.Page{}, fmt.Errorf("ntfy: bad cursor %q", cursor)
		}
		idx = n
	}
	q := url.Values{}
	if !lq.Since.IsZero() {
		// ntfy's cache after a unix time, in seconds: a second earlier,
		// so a write in Since's own second is kept however ntfy compares.
		q.Set("since", strconv.FormatInt(lq.Since.Unix()-1, 10))
	}
	ms, meta, err := p.poll(ctx, p.c.Topics[idx], q)
	if err != nil {
		return provider.Page{}, err
	}
	horizon := meta.RequestTime.Add(-p.c.CacheDuration)
	page := provider.Page{Meta: meta, Horizon: &horizon}
	for _, m := range ms {
		page.Writes = append(page.Writes, p.own(m))
	}
	if idx+1 < len(p.c.Topics) {
		page.Next = strconv.Itoa(idx + 1)
	}
	return page, nil
}

// Probe implements provider.Provider: the topic's cached messages whose
// text is exactly the body as ntfy keeps it, trimmed. It cannot see past the cache duration, so an
// attempt older than that is not probed (ErrUnsupported).
func (p *Provider) Probe(ctx context.Context, w provider.Write) (provider.Probed, error) {
	if !topicRE.MatchString(w.Target) {
		return provider.Probed{}, fmt.Errorf("ntfy: target %q is not a topic: %w", w.Target, provider.ErrUnsupported)
	}
	text := string(bytes.TrimSpace(w.Body)) // as ntfy keeps it
	ms, meta, err := p.poll(ctx, w.Target, url.Values{"message": {text}})
	if err != nil {
		return provider.Probed{}, err
	}
	for _, m := range ms {
		if m.Message == text {
			return provider.Probed{Found: true, RemoteID: m.ID, Meta: meta}, nil
		}
	}
	horizon := meta.RequestTime.Add(-p.c.CacheDuration)
	return provider.Probed{Meta: meta, Horizon: &horizon}, nil
}

// CanWrite implements provider.Provider: any topic name can be written to
// (a refusal, 403 for a reserved topic, buckets the intent when posted).
func (p *Provider) CanWrite(ctx context.Context, target, parent string) (provider.Writable, error) {
	if !topicRE.MatchString(target) {
		return provider.Writable{Reason: fmt.Sprintf("target %q is not an ntfy topic: a topic is 1 to 64 letters, digits, - or _", target)}, nil
	}
	return provider.Writable{OK: true}, nil
}
