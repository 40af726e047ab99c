// Package webhook is the generic webhook provider: each write is a JSON
// POST ({"target","parent","body","idempotency_key"}) signed with
// HMAC-SHA256 of the raw body in X-Tidemark-Signature ("sha256=<hex>") and
// carrying an Idempotency-Key header derived from the intent. A receiver
// that also offers read endpoints (list_url, probe_url, count_url,
// target_url) lets the outbox reconcile against it; without them the
// outbox can send but cannot reconcile, and says so.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox/provider"
)

// SignatureHeader carries "sha256=" + hex HMAC-SHA256 of the body.
const SignatureHeader = "X-Tidemark-Signature"

// Config configures a webhook lane.
type Config struct {
	URL    string // where writes are POSTed (required)
	Secret []byte // HMAC key (required)
	// Optional read endpoints of the receiver.
	ListURL   string // GET ?cursor=&limit= → {"writes":[{id,created_at,target,parent,body_sha256}],"next":""}
	ProbeURL  string // GET ?target=&parent=&body_sha256= → {"found":bool,"id":""}
	CountURL  string // GET → {"count":n}
	TargetURL string // GET ?target=&parent= → {"writable":bool,"reason":""}
	PageSize  int
	Client    *http.Client
	Clock     clock.Clock
}

// FromSettings builds a Config from a lane's settings: url, secret (or
// secret_env, the environment variable holding it), list_url, probe_url, count_url,
// target_url, page_size, timeout.
func FromSettings(s map[string]string) (Config, error) {
	secret, err := provider.Settings(s).Token("secret", "secret_env", "TIDEMARK_WEBHOOK_SECRET", os.Getenv)
	if err != nil {
		return Config{}, err
	}
	c := Config{URL: s["url"], Secret: []byte(secret), ListURL: s["list_url"], ProbeURL: s["probe_url"], CountURL: s["count_url"], TargetURL: s["target_url"]}
	if n, err := strconv.Atoi(s["page_size"]); err == nil {
		c.PageSize = n
	}
	timeout := 30 * time.Second
	if v := s["timeout"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return c, tidemark.Invalidf("setting timeout", v, "want a duration")
		}
		timeout = d
	}
	c.Client = &http.Client{Timeout: timeout}
	return c, nil
}

// Provider is a webhook lane.
type Provider struct {
	c Config
	w *provider.WriteClient // every POST goes through it; reads use c.Client
}

// WriteBound implements provider.Bounded: the timeout setting (a client
// without a timeout is bounded by the deliverer's default).
func (p *Provider) WriteBound() time.Duration {
	if p.c.Client != nil {
		return p.c.Client.Timeout
	}
	return 0
}

// New checks cfg and returns the provider.
func New(cfg Config) (*Provider, error) {
	if _, err := url.ParseRequestURI(cfg.URL); err != nil || cfg.URL == "" {
		return nil, tidemark.Invalidf("setting url", cfg.URL, "want an absolute URL")
	}
	if len(cfg.Secret) == 0 {
		return nil, tidemark.Invalidf("secret", "", "a webhook needs a secret to sign with")
	}
	w := provider.HTTPDefaults(&cfg.Client, &cfg.Clock)
	if cfg.PageSize <= 0 || cfg.PageSize > 1000 {
		cfg.PageSize = 100
	}
	return &Provider{c: cfg, w: w}, nil
}

var _ provider.Provider = (*Provider)(nil)

// Sign returns the signature header value for body.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

type created struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
}

// Post implements provider.Provider.
func (p *Provider) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	body, err := json.Marshal(map[string]string{"target": w.Target, "parent": w.Parent, "body": string(w.Body), "idempotency_key": w.IdempotencyKey})
	if err != nil {
		return provider.Posted{}, err
	}
	req, err := http.NewRequest(http.MethodPost, p.c.URL, bytes.NewReader(body))
	if err != nil {
		return provider.Posted{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(p.c.Secret, body))
	if w.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", w.IdempotencyKey)
	}
	ans, err := p.w.Post(ctx, p.c.Clock.Now, req)
	if err != nil {
		return provider.Posted{}, err
	}
	var c created
	if len(bytes.TrimSpace(ans)) > 0 {
		if err := json.Unmarshal(ans, &c); err != nil {
			// It landed (2xx); we just cannot read its id.
			return provider.Posted{}, nil
		}
	}
	return provider.Posted{RemoteID: c.ID, CreatedAt: c.CreatedAt}, nil
}

type listed struct {
	Writes []struct {
		ID         string    `json:"id"`
		CreatedAt  time.Time `json:"created_at"`
		Target     string    `json:"target"`
		Parent     string    `json:"parent"`
		BodySHA256 string    `json:"body_sha256"`
	} `json:"writes"`
	Next string `json:"next"`
}

// ListOwn implements provider.Provider.
func (p *Provider) ListOwn(ctx context.Context, lq provider.ListQuery) (provider.Page, error) {
	if p.c.ListURL == "" {
		return provider.Page{}, fmt.Errorf("webhook: no list_url: %w", provider.ErrUnsupported)
	}
	q := url.Values{"cursor": {lq.Cursor}, "limit": {strconv.Itoa(p.c.PageSize)}}
	if !lq.Since.IsZero() {
		// A receiver may leave out what is older; one that ignores it
		// lists everything, which is only slower.
		q.Set("since", lq.Since.UTC().Format(time.RFC3339Nano))
	}
	u, err := withQuery(p.c.ListURL, q)
	if err != nil {
		return provider.Page{}, err
	}
	var l listed
	meta, _, err := provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, u, &l)
	if err != nil {
		return provider.Page{}, err
	}
	page := provider.Page{Next: l.Next, Meta: meta, Writes: make([]provider.OwnWrite, 0, len(l.Writes))}
	for _, w := range l.Writes {
		page.Writes = append(page.Writes, provider.OwnWrite{RemoteID: w.ID, CreatedAt: w.CreatedAt, Target: w.Target,
			Parent: w.Parent, HasParent: true, BodySHA256: w.BodySHA256})
	}
	return page, nil
}

// Probe implements provider.Provider.
func (p *Provider) Probe(ctx context.Context, w provider.Write) (provider.Probed, error) {
	if p.c.ProbeURL == "" {
		return provider.Probed{}, fmt.Errorf("webhook: no probe_url: %w", provider.ErrUnsupported)
	}
	u, err := withQuery(p.c.ProbeURL, url.Values{"target": {w.Target}, "parent": {w.Parent}, "body_sha256": {provider.BodySHA256(w.Body)}})
	if err != nil {
		return provider.Probed{}, err
	}
	var ans struct {
		Found bool   `json:"found"`
		ID    string `json:"id"`
	}
	meta, _, err := provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, u, &ans)
	if err != nil {
		return provider.Probed{}, err
	}
	return provider.Probed{Found: ans.Found, RemoteID: ans.ID, Meta: meta}, nil
}

// Count implements provider.Provider.
func (p *Provider) Count(ctx context.Context) (int64, error) {
	if p.c.CountURL == "" {
		return 0, fmt.Errorf("webhook: no count_url: %w", provider.ErrUnsupported)
	}
	req, err := http.NewRequest(http.MethodGet, p.c.CountURL, nil)
	if err != nil {
		return 0, err
	}
	var ans struct {
		Count *int64 `json:"count"`
	}
	if _, _, err := provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, req, &ans); err != nil {
		return 0, err
	}
	if ans.Count == nil {
		return 0, fmt.Errorf("webhook: count_url answered without a count")
	}
	return *ans.Count, nil
}

// CanWrite implements provider.Provider. Without target_url every target
// is taken to be writable; the POST's answer still buckets a refusal.
func (p *Provider) CanWrite(ctx context.Context, target, parent string) (provider.Writable, error) {
	if p.c.TargetURL == "" {
		return provider.Writable{OK: true}, nil
	}
	u, err := withQuery(p.c.TargetURL, url.Values{"target": {target}, "parent": {parent}})
	if err != nil {
		return provider.Writable{}, err
	}
	var ans struct {
		Writable bool   `json:"writable"`
		Reason   string `json:"reason"`
	}
	if _, _, err := provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, u, &ans); err != nil {
		return provider.Writable{}, err
	}
	return provider.Writable{OK: ans.Writable, Reason: ans.Reason}, nil
}

func withQuery(base string, q url.Values) (*http.Request, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, tidemark.Invalidf("url", base, "%v", err)
	}
	old := u.Query()
	for k, v := range q {
		old[k] = v
	}
	u.RawQuery = old.Encode()
	return http.NewRequest(http.MethodGet, u.String(), nil)
}
