// Package mastodon posts statuses to a Mastodon account. Writes carry an
// Idempotency-Key (Mastodon keeps it for an hour); the account's statuses
// list is the ordered read of our own writes; statuses_count is the counter
// that verifies a write by subtraction. Mastodon returns a status as HTML,
// not as sent, so writes are matched on a fingerprint of their visible
// text (Fingerprint) rather than the raw body's hash.
//
// Target is the lane's timeline name (setting "target", default
// "timeline"); parent is the id of the status replied to.
package mastodon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox/provider"
)

const (
	// MaxCharacters is a status's limit on a Mastodon instance that does
	// not set its own (its configuration.statuses.max_characters).
	MaxCharacters = 500
	// URLCharacters is what Mastodon counts a link as, however long.
	URLCharacters = 23
)

// Config configures a Mastodon lane.
type Config struct {
	BaseURL    string // https://mastodon.example
	Token      string // an access token with write:statuses and read:accounts
	Visibility string // public, unlisted (default), private, direct
	Target     string // the target name intents use; default "timeline"
	AccountID  string // looked up with verify_credentials when empty
	// MaxCharacters is the instance's limit on a status (default
	// MaxCharacters), counted as Mastodon counts: grapheme clusters, a
	// link URLCharacters.
	MaxCharacters int
	PageSize      int
	Client        *http.Client
	Clock         clock.Clock
}

// FromSettings builds a Config from a lane's settings: base_url, token (or
// token_env, the variable holding it, default MASTODON_TOKEN), visibility, target, account_id,
// max_characters.
func FromSettings(s map[string]string) (Config, error) {
	st := provider.Settings(s)
	tok, err := st.Token("token", "token_env", "MASTODON_TOKEN", os.Getenv)
	if err != nil {
		return Config{}, err
	}
	max := MaxCharacters
	if v := st.Get("max_characters", ""); v != "" {
		if max, err = strconv.Atoi(v); err != nil || max <= 0 {
			return Config{}, tidemark.Invalidf("setting max_characters", v, "want a positive number of characters")
		}
	}
	return Config{BaseURL: st.Get("base_url", ""), Token: tok, Visibility: st.Get("visibility", "unlisted"),
		Target: st.Get("target", "timeline"), AccountID: st.Get("account_id", ""), MaxCharacters: max}, nil
}

// Provider is a Mastodon lane.
type Provider struct {
	c    Config
	w    *provider.WriteClient // every POST goes through it; reads use c.Client
	mu   sync.Mutex
	acct string
}

// New checks cfg and returns the provider.
func New(cfg Config) (*Provider, error) {
	if u, err := url.Parse(cfg.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, tidemark.Invalidf("setting base_url", cfg.BaseURL, "want https://host")
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Token == "" {
		return nil, tidemark.Invalidf("token", "", "a Mastodon lane needs an access token")
	}
	switch cfg.Visibility {
	case "":
		cfg.Visibility = "unlisted"
	case "public", "unlisted", "private", "direct":
	default:
		// Mastodon answers any other with 422, on every post.
		return nil, tidemark.Invalidf("setting visibility", cfg.Visibility, "want public, unlisted, private or direct")
	}
	if cfg.Target == "" {
		cfg.Target = "timeline"
	}
	if cfg.MaxCharacters <= 0 {
		cfg.MaxCharacters = MaxCharacters
	}
	if cfg.PageSize <= 0 || cfg.PageSize > 40 {
		cfg.PageSize = 40
	}
	w := provider.HTTPDefaults(&cfg.Client, &cfg.Clock)
	return &Provider{c: cfg, w: w, acct: cfg.AccountID}, nil
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.Fingerprinter = (*Provider)(nil)
)

var (
	tagRE   = regexp.MustCompile(`<[^>]*>`)
	breakRE = regexp.MustCompile(`(?i)<br\s*/?>|</p>\s*<p>`)
)

// Fingerprint is the SHA-256 of a text's visible words: HTML tags dropped,
// entities decoded, whitespace collapsed. A body as sent and the HTML
// Mastodon renders from it have the same fingerprint.
func (p *Provider) Fingerprint(body []byte) string {
	return provider.BodySHA256([]byte(visible(string(body), false)))
}

func visible(s string, isHTML bool) string {
	if isHTML {
		s = breakRE.ReplaceAllString(s, " ")
		s = tagRE.ReplaceAllString(s, "")
		s = html.UnescapeString(s)
	}
	return strings.Join(strings.Fields(s), " ")
}

func (p *Provider) request(method, path string, body []byte) (*http.Request, error) {
	var rd *bytes.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, p.c.BaseURL+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.c.Token)
	return req, nil
}

type status struct {
	ID          string    `json:"id"`
	CreatedAt   time.Time `json:"created_at"`
	InReplyToID *string   `json:"in_reply_to_id"`
	Content     string    `json:"content"`
	Text        *string   `json:"text"`
}

func (p *Provider) own(s status) provider.OwnWrite {
	w := provider.OwnWrite{RemoteID: s.ID, CreatedAt: s.CreatedAt, Target: p.c.Target, HasParent: true}
	if s.InReplyToID != nil {
		w.Parent = *s.InReplyToID
	}
	if s.Text != nil && *s.Text != "" {
		w.BodySHA256 = provider.BodySHA256([]byte(visible(*s.Text, false)))
	} else {
		w.BodySHA256 = provider.BodySHA256([]byte(visible(s.Content, true)))
	}
	return w
}

// Post implements provider.Provider.
func (p *Provider) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	if w.Target != p.c.Target {
		return provider.Posted{}, &provider.RejectedError{Status: 0, Body: fmt.Sprintf("target %q is not this lane's %q", w.Target, p.c.Target)}
	}
	// Mastodon would answer 422, which stops the lane: this write alone
	// can never be made.
	if n := provider.LinkedLength(string(w.Body), URLCharacters); n > p.c.MaxCharacters {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("the status is %d characters as Mastodon counts them (a link %d); the instance takes at most %d (max_characters)",
			n, URLCharacters, p.c.MaxCharacters)}
	}
	form := url.Values{"status": {string(w.Body)}, "visibility": {p.c.Visibility}}
	if w.Parent != "" {
		form.Set("in_reply_to_id", w.Parent)
	}
	req, err := p.request(http.MethodPost, "/api/v1/statuses", []byte(form.Encode()))
	if err != nil {
		return provider.Posted{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if w.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", w.IdempotencyKey)
	}
	ans, err := p.w.Post(ctx, p.c.Clock.Now, req)
	if err != nil {
		return provider.Posted{}, err
	}
	var s status
	if err := json.Unmarshal(ans, &s); err != nil {
		return provider.Posted{}, nil // it landed; its id is unreadable
	}
	return provider.Posted{RemoteID: s.ID, CreatedAt: s.CreatedAt}, nil
}

type account struct {
	ID            string `json:"id"`
	StatusesCount int64  `json:"statuses_count"`
}

func (p *Provider) verify(ctx context.Context) (account, error) {
	req, err := p.request(http.MethodGet, "/api/v1/accounts/verify_credentials", nil)
	if err != nil {
		return account{}, err
	}
	var a account
	_, _, err = provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, req, &a)
	return a, err
}

func (p *Provider) accountID(ctx context.Context) (string, error) {
	p.mu.Lock()
	id := p.acct
	p.mu.Unlock()
	if id != "" {
		return id, nil
	}
	a, err := p.verify(ctx)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.acct = a.ID
	p.mu.Unlock()
	return a.ID, nil
}

// KeyScope implements provider.KeyScoped: Mastodon keeps Idempotency-Keys
// per account. The account is told by its token here, without a request,
// so a new token of the same account is taken for a new scope too: its
// writes in doubt then wait for a read, which is safe, never a resend.
func (p *Provider) KeyScope() string {
	return provider.ScopeDigest("mastodon", p.c.BaseURL, p.c.Token)
}

// ListScope implements provider.Resumable: the listing's cursor is a
// status id (max_id), a keyset that statuses posted or deleted since do
// not move.
func (p *Provider) ListScope() string {
	return provider.ScopeDigest("mastodon", p.c.BaseURL, p.c.Token, p.c.AccountID)
}

// ListOwn implements provider.Provider: the account's statuses, newest
// first by id (a stable order), paginated by max_id.
func (p *Provider) ListOwn(ctx context.Context, lq provider.ListQuery) (provider.Page, error) {
	cursor := lq.Cursor
	id, err := p.accountID(ctx)
	if err != nil {
		return provider.Page{}, err
	}
	q := url.Values{"limit": {fmt.Sprint(p.c.PageSize)}, "exclude_reblogs": {"true"}}
	if cursor != "" {
		q.Set("max_id", cursor)
	}
	req, err := p.request(http.MethodGet, "/api/v1/accounts/"+url.PathEscape(id)+"/statuses?"+q.Encode(), nil)
	if err != nil {
		return provider.Page{}, err
	}
	var ss []status
	meta, _, err := provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, req, &ss)
	if err != nil {
		return provider.Page{}, err
	}
	page := provider.Page{Meta: meta}
	for _, s := range ss {
		page.Writes = append(page.Writes, p.own(s))
	}
	if len(ss) == p.c.PageSize && !ss[len(ss)-1].CreatedAt.Before(lq.Since) {
		// Newest first: past a status older than Since, all are.
		page.Next = ss[len(ss)-1].ID
	}
	return page, nil
}

// Probe implements provider.Provider: it looks for the write among the
// account's newest statuses.
func (p *Provider) Probe(ctx context.Context, w provider.Write) (provider.Probed, error) {
	page, err := p.ListOwn(ctx, provider.ListQuery{})
	if err != nil {
		return provider.Probed{}, err
	}
	fp := p.Fingerprint(w.Body)
	for _, o := range page.Writes {
		if o.Parent == w.Parent && o.BodySHA256 == fp {
			return provider.Probed{Found: true, RemoteID: o.RemoteID, Meta: page.Meta}, nil
		}
	}
	return provider.Probed{Meta: page.Meta}, nil
}

// Count implements provider.Provider: the account's statuses_count.
func (p *Provider) Count(ctx context.Context) (int64, error) {
	a, err := p.verify(ctx)
	return a.StatusesCount, err
}

// CanWrite implements provider.Provider: a reply needs its parent status
// to still exist.
func (p *Provider) CanWrite(ctx context.Context, target, parent string) (provider.Writable, error) {
	if target != p.c.Target {
		return provider.Writable{Reason: fmt.Sprintf("target %q is not this lane's %q: a Mastodon lane posts to its account's "+
			"timeline, named by its target setting (default \"timeline\")", target, p.c.Target)}, nil
	}
	if parent == "" {
		return provider.Writable{OK: true}, nil
	}
	req, err := p.request(http.MethodGet, "/api/v1/statuses/"+url.PathEscape(parent), nil)
	if err != nil {
		return provider.Writable{}, err
	}
	_, _, err = provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, req, nil)
	if status, closed := provider.Closed(err); closed {
		return provider.Writable{Reason: fmt.Sprintf("parent status %s answered %d: a reply needs a status that exists and "+
			"the account can see (its id is the number at the end of its URL)", parent, status)}, nil
	}
	if err != nil {
		return provider.Writable{}, err
	}
	return provider.Writable{OK: true}, nil
}
