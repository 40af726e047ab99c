// Package github writes issue comments through the GitHub REST API. GitHub
// takes no idempotency key, so the outbox's journal and reconciliation are
// what keep a comment from being posted twice. The ordered read of our own
// writes is each configured repository's issue comments in creation order,
// filtered to our login; GitHub returns comment bodies as sent, so writes
// are matched on the body's SHA-256. There is no counter.
//
// Target is "owner/repo#number"; parent is unused.
package github

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
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox/provider"
)

// MaxCommentCharacters is the longest comment body GitHub takes, in
// characters as it counts them (code points); a longer one is answered 422.
const MaxCommentCharacters = 65536

// Config configures a GitHub lane.
type Config struct {
	APIURL string // default https://api.github.com
	Token  string
	Login  string   // our login; looked up with GET /user when empty
	Repos  []string // owner/repo whose comments are listed on reconciliation
	Since  string   // optional ISO 8601 lower bound for the listing
	Client *http.Client
	Clock  clock.Clock
}

// FromSettings builds a Config from a lane's settings: api_url, token (or
// token_env, the variable holding it, default GITHUB_TOKEN), login, repos (comma-separated owner/repo), since.
func FromSettings(s map[string]string) (Config, error) {
	st := provider.Settings(s)
	tok, err := st.Token("token", "token_env", "GITHUB_TOKEN", os.Getenv)
	if err != nil {
		return Config{}, err
	}
	c := Config{APIURL: st.Get("api_url", "https://api.github.com"), Token: tok, Login: st.Get("login", ""), Since: st.Get("since", "")}
	for _, r := range strings.Split(st.Get("repos", ""), ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.Repos = append(c.Repos, r)
		}
	}
	return c, nil
}

// Provider is a GitHub lane.
type Provider struct {
	// Count: GitHub has no counter of our comments.
	provider.NoCount
	c     Config
	w     *provider.WriteClient // every POST goes through it; reads use c.Client
	mu    sync.Mutex
	login string
}

// New checks cfg and returns the provider.
func New(cfg Config) (*Provider, error) {
	if cfg.APIURL == "" {
		cfg.APIURL = "https://api.github.com"
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.Token == "" {
		return nil, tidemark.Invalidf("token", "", "a GitHub lane needs a token")
	}
	for _, r := range cfg.Repos {
		if !repoRE.MatchString(r) {
			return nil, tidemark.Invalidf("setting repos", r, "want owner/repo")
		}
	}
	if cfg.Since != "" {
		// GitHub answers a since it cannot read with 422, on every listing.
		if _, err := time.Parse(time.RFC3339, cfg.Since); err != nil {
			return nil, tidemark.Invalidf("setting since", cfg.Since, "want an ISO 8601 time such as 2026-01-02T15:04:05Z")
		}
	}
	w := provider.HTTPDefaults(&cfg.Client, &cfg.Clock)
	return &Provider{NoCount: "github", c: cfg, w: w, login: cfg.Login}, nil
}

var _ provider.Provider = (*Provider)(nil)

var (
	repoRE   = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	targetRE = regexp.MustCompile(`^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#([0-9]+)$`)
	issueRE  = regexp.MustCompile(`/repos/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/issues/([0-9]+)$`)
)

// ParseTarget splits "owner/repo#number".
func ParseTarget(t string) (repo string, number int, err error) {
	m := targetRE.FindStringSubmatch(t)
	if m == nil {
		return "", 0, tidemark.Invalidf("target", t, "want owner/repo#number")
	}
	n, _ := strconv.Atoi(m[2])
	return m[1], n, nil
}

func (p *Provider) request(method, urlOrPath string, body []byte) (*http.Request, error) {
	u := urlOrPath
	if strings.HasPrefix(u, "/") {
		u = p.c.APIURL + u
	}
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.c.Token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	return req, nil
}

type comment struct {
	ID        int64     `json:"id"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
	IssueURL  string    `json:"issue_url"`
	User      struct {
		Login string `json:"login"`
	} `json:"user"`
}

// Post implements provider.Provider.
func (p *Provider) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	repo, n, err := ParseTarget(w.Target)
	if err != nil {
		return provider.Posted{}, &provider.RejectedError{Body: err.Error()}
	}
	if w.Parent != "" {
		return provider.Posted{}, &provider.RejectedError{Body: "GitHub issue comments have no parent"}
	}
	// GitHub would answer 422, which stops the lane: this write alone can
	// never be made.
	if n := utf8.RuneCount(w.Body); n > MaxCommentCharacters {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("the comment is %d characters; GitHub takes at most %d", n, MaxCommentCharacters)}
	}
	body, _ := json.Marshal(map[string]string{"body": string(w.Body)})
	req, err := p.request(http.MethodPost, fmt.Sprintf("/repos/%s/issues/%d/comments", repo, n), body)
	if err != nil {
		return provider.Posted{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	ans, err := p.w.Post(ctx, p.c.Clock.Now, req)
	if err != nil {
		return provider.Posted{}, err
	}
	var c comment
	if err := json.Unmarshal(ans, &c); err != nil {
		return provider.Posted{}, nil
	}
	return provider.Posted{RemoteID: strconv.FormatInt(c.ID, 10), CreatedAt: c.CreatedAt}, nil
}

func (p *Provider) ourLogin(ctx context.Context) (string, error) {
	p.mu.Lock()
	l := p.login
	p.mu.Unlock()
	if l != "" {
		return l, nil
	}
	req, err := p.request(http.MethodGet, "/user", nil)
	if err != nil {
		return "", err
	}
	var u struct {
		Login string `json:"login"`
	}
	if _, _, err := provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, req, &u); err != nil {
		return "", err
	}
	if u.Login == "" {
		return "", errors.New("github: GET /user returned no login")
	}
	p.mu.Lock()
	p.login = u.Login
	p.mu.Unlock()
	return u.Login, nil
}

func (p *Provider) own(c comment) (provider.OwnWrite, bool) {
	m := issueRE.FindStringSubmatch(c.IssueURL)
	if m == nil {
		return provider.OwnWrite{}, false
	}
	return provider.OwnWrite{RemoteID: strconv.FormatInt(c.ID, 10), CreatedAt: c.CreatedAt, Target: m[1] + "#" + m[2],
		HasParent: true, BodySHA256: provider.BodySHA256([]byte(c.Body))}, true
}

// cursor is "repo-index" or "repo-index|next-page-url".
func (p *Provider) page(ctx context.Context, u string) ([]comment, provider.Meta, string, error) {
	req, err := p.request(http.MethodGet, u, nil)
	if err != nil {
		return nil, provider.Meta{}, "", err
	}
	var cs []comment
	meta, resp, err := provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, req, &cs)
	if err != nil {
		return nil, meta, "", err
	}
	return cs, meta, provider.NextLink(resp.Header), nil
}

// Covers implements provider.Covering: the listing reads the comments of
// the repositories the lane names (GitHub's names ignore case), and no
// other.
func (p *Provider) Covers(target, _ string) bool {
	m := targetRE.FindStringSubmatch(target)
	if m == nil {
		return false
	}
	return slices.ContainsFunc(p.c.Repos, func(r string) bool { return strings.EqualFold(r, m[1]) })
}

// listSince is the listing's since=: the later of the lane's own bound and
// the caller's (GitHub's since= leaves out comments last updated before
// it, and a comment made after a time was updated after it too).
func (p *Provider) listSince(since time.Time) string {
	if since.IsZero() {
		return p.c.Since
	}
	if own, err := time.Parse(time.RFC3339, p.c.Since); p.c.Since != "" && (err != nil || !own.Before(since)) {
		return p.c.Since
	}
	return since.UTC().Format(time.RFC3339)
}

// ListOwn implements provider.Provider: each configured repository's
// issue comments in creation order, filtered to our login, page by page.
func (p *Provider) ListOwn(ctx context.Context, lq provider.ListQuery) (provider.Page, error) {
	cursor := lq.Cursor
	if len(p.c.Repos) == 0 {
		return provider.Page{}, fmt.Errorf("github: no repos configured to list: %w", provider.ErrUnsupported)
	}
	login, err := p.ourLogin(ctx)
	if err != nil {
		return provider.Page{}, err
	}
	at, err := provider.ParsePageTargets("github", cursor, len(p.c.Repos))
	if err != nil {
		return provider.Page{}, err
	}
	u := at.Token
	if u == "" {
		q := url.Values{"sort": {"created"}, "direction": {"asc"}, "per_page": {"100"}}
		if since := p.listSince(lq.Since); since != "" {
			q.Set("since", since)
		}
		u = fmt.Sprintf("/repos/%s/issues/comments?%s", p.c.Repos[at.Index], q.Encode())
	} else if !strings.HasPrefix(u, p.c.APIURL+"/") {
		return provider.Page{}, fmt.Errorf("github: next page %q leaves %s", u, p.c.APIURL)
	}
	cs, meta, nextURL, err := p.page(ctx, u)
	if err != nil {
		return provider.Page{}, err
	}
	page := provider.Page{Meta: meta}
	for _, c := range cs {
		if c.User.Login != login {
			continue
		}
		if w, ok := p.own(c); ok {
			page.Writes = append(page.Writes, w)
		}
	}
	page.Next = at.Next(nextURL != "", nextURL)
	return page, nil
}

// probePages bounds the pages one probe reads.
const probePages = 20

// Probe implements provider.Provider: our comments on the target issue,
// those made or edited since w.NotBefore when it is set (since= filters
// on updated_at, which an edit only moves later), so the write in doubt is
// on the first page however long the issue. A probe that could not read
// to the end (its page budget spent, or a next page off api_url) cannot
// tell: it answers an error, never "not found".
func (p *Provider) Probe(ctx context.Context, w provider.Write) (provider.Probed, error) {
	repo, n, err := ParseTarget(w.Target)
	if err != nil {
		return provider.Probed{}, err
	}
	login, err := p.ourLogin(ctx)
	if err != nil {
		return provider.Probed{}, err
	}
	sum := provider.BodySHA256(w.Body)
	q := url.Values{"per_page": {"100"}}
	if !w.NotBefore.IsZero() {
		q.Set("since", w.NotBefore.UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	u := fmt.Sprintf("/repos/%s/issues/%d/comments?%s", repo, n, q.Encode())
	var first *provider.Meta
	for pages := 0; u != ""; pages++ {
		if pages == probePages {
			return provider.Probed{}, fmt.Errorf("github: probe of %s: more than %d pages of comments to read: cannot tell", w.Target, probePages)
		}
		cs, meta, next, err := p.page(ctx, u)
		if err != nil {
			return provider.Probed{}, err
		}
		if first == nil {
			first = &meta
		}
		for _, c := range cs {
			if c.User.Login == login && provider.BodySHA256([]byte(c.Body)) == sum {
				return provider.Probed{Found: true, RemoteID: strconv.FormatInt(c.ID, 10), Meta: *first}, nil
			}
		}
		if next != "" && !strings.HasPrefix(next, p.c.APIURL+"/") {
			return provider.Probed{}, fmt.Errorf("github: probe of %s: next page %q leaves %s: cannot tell", w.Target, next, p.c.APIURL)
		}
		u = next
	}
	// The oldest page read dates the answer.
	return provider.Probed{Meta: *first}, nil
}

// CanWrite implements provider.Provider: the issue must exist and not be
// locked.
func (p *Provider) CanWrite(ctx context.Context, target, parent string) (provider.Writable, error) {
	repo, n, err := ParseTarget(target)
	if err != nil {
		return provider.Writable{Reason: err.Error()}, nil
	}
	req, err := p.request(http.MethodGet, fmt.Sprintf("/repos/%s/issues/%d", repo, n), nil)
	if err != nil {
		return provider.Writable{}, err
	}
	var issue struct {
		Locked bool `json:"locked"`
	}
	_, _, err = provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, req, &issue)
	if status, closed := provider.Closed(err); closed {
		return provider.Writable{Reason: fmt.Sprintf("issue %s answered %d: check the repository and the issue's number, "+
			"and that the lane's token can see the repository", target, status)}, nil
	}
	if err != nil {
		return provider.Writable{}, err
	}
	if issue.Locked {
		return provider.Writable{Reason: "issue is locked"}, nil
	}
	return provider.Writable{OK: true}, nil
}
