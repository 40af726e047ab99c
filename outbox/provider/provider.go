// Package provider is the small interface the outbox writes through, one
// implementation per kind of system in a package of its own (webhook,
// mastodon, github), and the errors that tell the outbox what a failed call
// means: definitely not landed, not writable, come back later, or unknown.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/redact"
)

// Write is one outbound write.
type Write struct {
	Target string
	Parent string
	Body   []byte
	// IdempotencyKey is derived from the intent; providers that accept a
	// key send it, others ignore it.
	IdempotencyKey string
	// NotBefore, set on a probe for a write in doubt, is the earliest time
	// the write can have been made, by the remote's clock too (the
	// intent's first attempt's start less the lane's skew, the clock
	// difference the freshness rule allows for): a probe may read only
	// what was made or changed since. Zero: unknown, read everything.
	NotBefore time.Time
}

// Posted is a write the provider accepted.
type Posted struct {
	RemoteID  string
	CreatedAt time.Time
}

// OwnWrite is one of our own writes as the provider lists it.
type OwnWrite struct {
	RemoteID  string
	CreatedAt time.Time
	Target    string
	Parent    string
	HasParent bool
	// BodySHA256 is "" when the provider does not return the body as sent.
	BodySHA256 string
}

// Meta is how old an answer is: our clock when the request went out, and
// the response's Date and Age headers verbatim.
type Meta struct {
	RequestTime time.Time
	Date        string
	Age         string
	// CacheControl is the response's Cache-Control header verbatim.
	CacheControl string
}

// EffectiveAge is the Age the freshness rule reads: the Age header when
// there is one, else "0" when the answer says no cache may keep it
// (Cache-Control: no-store, RFC 9111 §5.2.2.5: a cache must not store any
// part of it, so it cannot be a kept copy), else "" (no proof of age).
func (m Meta) EffectiveAge() string {
	if strings.TrimSpace(m.Age) != "" {
		return m.Age
	}
	for _, d := range strings.Split(m.CacheControl, ",") {
		if strings.EqualFold(strings.TrimSpace(d), "no-store") {
			return "0"
		}
	}
	return ""
}

// Page is one page of our own writes, in the provider's stable order.
type Page struct {
	Writes []OwnWrite
	// Next is the cursor of the following page, "" after the last.
	Next string
	Meta Meta
	// Horizon, when set, is the oldest time the listing can still show: a
	// provider that keeps writes for a while only (ntfy's cache) cannot
	// list one made before it, so its absence proves nothing.
	Horizon *time.Time
}

// Probed is the answer to a probe of one target for one write.
type Probed struct {
	Found    bool
	RemoteID string
	Meta     Meta
	// Horizon, as for Page: a write made before it is not found even if
	// it landed.
	Horizon *time.Time
}

// Writable says whether a target can accept a write now.
type Writable struct {
	OK     bool
	Reason string // why not: deleted, locked, moderated, …
}

// ListQuery asks for one page of the account's own writes.
type ListQuery struct {
	// Cursor is the page to read: "" for the first, else a page's Next.
	Cursor string
	// Since, when set, is the earliest a write the caller needs can have
	// been made: the listing may leave out writes made before it, and
	// reads no further once what is left of a target is older (by its
	// API's own filter, or because the target lists newest first). The
	// zero time asks for every write.
	Since time.Time
}

// Provider is a system tidemark writes to, seen through one account.
type Provider interface {
	// Post makes one write.
	Post(ctx context.Context, w Write) (Posted, error)
	// ListOwn returns a page of the account's own writes, in a stable
	// order (see ListQuery).
	ListOwn(ctx context.Context, q ListQuery) (Page, error)
	// Probe looks for one write at its target.
	Probe(ctx context.Context, w Write) (Probed, error)
	// Count returns the account's counter of writes (ErrUnsupported when
	// the provider has none).
	Count(ctx context.Context) (int64, error)
	// CanWrite checks whether the target can accept a write.
	CanWrite(ctx context.Context, target, parent string) (Writable, error)
}

// Bounded is implemented by a provider whose settings bound its writes
// otherwise than DefaultTimeout: WriteBound is the longest one write may
// take from our side, from the moment it is sent.
type Bounded interface {
	WriteBound() time.Duration
}

// Covering is implemented by a provider whose listing of our own writes
// reads only some targets (Slack's channels, GitHub's repos, ntfy's
// topics, Matrix's rooms, as the lane's settings name them): a write to
// any other target is never listed, landed or not, so its absence there
// says nothing, and only a probe (or the idempotency key) can decide it.
type Covering interface {
	Covers(target, parent string) bool
}

// KeyScoped is implemented by a provider whose server remembers the
// idempotency keys it was sent in a memory of its own per account, token
// or device (Matrix keeps transaction ids per access token, Mastodon keys
// per account): a key sent under one scope says nothing of what the
// server remembers under another. KeyScope names the scope the provider
// sends under now, as a digest that shows no secret. A provider that
// says nothing has no scope a key can be trusted in.
type KeyScoped interface {
	KeyScope() string
}

// Resumable is implemented by a provider whose listing of our own writes
// can be read part of the way in one pass and on from its cursor in a
// later one, minutes or hours after, without skipping a write or reading
// one twice: its cursors stay valid, and each names a position that writes
// made or removed elsewhere in the listing cannot move (a keyset: an id,
// a time, a server's stream token, a target's index, a message's ts; never
// an offset, a page number, or an opaque cursor that promises neither,
// which a write removed before it could shift past one).
// ListScope names what the listing reads (the server, the account, the
// targets it lists), as a digest that shows no secret: a kept cursor is
// read on only under the same scope. "" says the listing cannot be
// resumed.
type Resumable interface {
	ListScope() string
}

// ScopeDigest names a key scope by what identifies it (a server, a
// token): a digest, so the scope can be kept and compared without keeping
// the token.
func ScopeDigest(parts ...string) string {
	return BodySHA256([]byte(strings.Join(parts, "\x00")))[:32]
}

var (
	// ErrUnsupported: the provider cannot do this (no counter, no listing).
	ErrUnsupported = errors.New("provider: not supported")
	// ErrUnexecutable: the target cannot accept the write (deleted, locked,
	// moderated); the write did not land.
	ErrUnexecutable = errors.New("provider: target cannot accept a write")
)

// UnexecutableError is ErrUnexecutable with the remote's answer, for a
// provider that reads more into it (an error code that is the lane's, not
// the target's).
type UnexecutableError struct {
	Status int
	Body   string
}

func (e *UnexecutableError) Error() string {
	return fmt.Sprintf("%s: status %d: %s", ErrUnexecutable, e.Status, e.Body)
}

func (e *UnexecutableError) Unwrap() error { return ErrUnexecutable }

// RetryAfterError: the provider refused the write for now (429, 503) and
// said when to come back. The write did not land.
type RetryAfterError struct {
	Status int
	After  time.Duration
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("provider: status %d, retry after %s", e.Status, e.After)
}

// RejectedError: the write was refused and did not land. Status is the
// remote's answer (a 4xx other than the above, a redirect, an SMTP 5xx,
// Slack's ok:false): the remote refused it for a reason that is the lane's or ours
// (credentials, a malformed or oversized request), not its target's state,
// so the outbox stops the lane rather than give up on the write. Status 0:
// the provider refused the write itself before sending anything (a target,
// a parent or a size it can never take), a refusal of this write alone.
type RejectedError struct {
	Status int
	Body   string
}

// Unsendable reports whether the provider refused the write before
// sending it, as it would refuse every attempt at this write (Status 0).
func (e *RejectedError) Unsendable() bool { return e.Status == 0 }

func (e *RejectedError) Error() string {
	return fmt.Sprintf("provider: rejected with status %d: %s", e.Status, e.Body)
}

// ReadRefusedError: the remote refused a read the lane needs (its listing
// of our writes, a probe) for a reason that is the lane's: its credential
// lacks a scope, or its account cannot see a target it is to read. Every
// such read is refused the same until the lane is fixed, so the lane
// cannot decide its writes in doubt: it matches tidemark.ErrUnavailable.
type ReadRefusedError struct {
	Op     string // what was read
	Reason string // what the remote said, and what to fix
}

func (e *ReadRefusedError) Error() string {
	return fmt.Sprintf("provider: %s refused: %s; fix the lane (outbox lane set) or its account", e.Op, e.Reason)
}

func (e *ReadRefusedError) Is(target error) bool { return target == tidemark.ErrUnavailable }

// UnknownError: the call's outcome is unknown (the connection broke, a 5xx
// after the request was sent, a timeout): the write may or may not have
// landed, and only reconciliation can tell.
type UnknownError struct{ Err error }

func (e *UnknownError) Error() string { return "provider: outcome unknown: " + e.Err.Error() }
func (e *UnknownError) Unwrap() error { return e.Err }

// NotSentError: the write provably never left, so it did not land: no
// connection to the remote was ever obtained (the dial was refused or
// timed out, the name did not resolve, the TLS handshake failed), so no
// byte of the request was written; or the protocol makes the remote
// discard what it got (SMTP before the final dot). It is sent again later.
// Only what proves it says so: a connection that broke after the request
// was (partly) written leaves the write in doubt (UnknownError).
type NotSentError struct{ Err error }

func (e *NotSentError) Error() string { return "provider: not sent: " + e.Err.Error() }
func (e *NotSentError) Unwrap() error { return e.Err }

// BodySHA256 returns the lowercase hex SHA-256 of body.
func BodySHA256(body []byte) string { return tidemark.HashEvidence(body) }

// MetaOf reads the age headers of a response.
func MetaOf(requestTime time.Time, resp *http.Response) Meta {
	return Meta{RequestTime: requestTime, Date: resp.Header.Get("Date"), Age: resp.Header.Get("Age"),
		CacheControl: strings.Join(resp.Header.Values("Cache-Control"), ", ")}
}

// ClassifyPost turns a non-2xx answer to a write into the error that says
// what it means for the outbox. Status 404, 410 and 403 mean the target
// cannot take the write, unless it is a rate limit (Retry-After, or
// X-RateLimit-Remaining: 0); 429, a rate-limit 403 and 503 with a wait
// hint (Retry-After, or X-RateLimit-Reset once the limit is spent) mean
// later (429 and 403 without a hint: in a minute); a
// redirect (301, 302, 307, 308: the write was not made here) and any other
// 4xx (401, 400, 407, 413, …) are a refusal of the lane's request, not a
// verdict on the target (RejectedError); the rest (303 See Other, 5xx) is
// unknown.
func ClassifyPost(resp *http.Response, body []byte, now time.Time) error {
	snippet := strings.TrimSpace(string(body))
	if len(snippet) > 300 {
		snippet = snippet[:300]
	}
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests || s == http.StatusServiceUnavailable || s == http.StatusForbidden && rateLimited(resp.Header):
		if d, ok := waitHint(resp.Header, body, now); ok {
			return &RetryAfterError{Status: s, After: d}
		}
		if s != http.StatusServiceUnavailable {
			return &RetryAfterError{Status: s, After: time.Minute}
		}
		return &UnknownError{Err: fmt.Errorf("status %d: %s", s, snippet)}
	case movedStatus(s):
		// The resource is elsewhere: the write was not made here, and
		// every attempt will be answered so until the target changes.
		return &RejectedError{Status: s, Body: fmt.Sprintf("moved to %q: change the lane's or the channel's target: %s", resp.Header.Get("Location"), snippet)}
	case closedStatus(s):
		return &UnexecutableError{Status: s, Body: snippet}
	case s >= 400 && s < 500:
		return &RejectedError{Status: s, Body: snippet}
	default:
		return &UnknownError{Err: fmt.Errorf("status %d: %s", s, snippet)}
	}
}

// movedStatus reports whether a status redirects the request elsewhere
// (301, 302, 307, 308): the request was not carried out here. 303 See
// Other is not one: it points to the result of a request carried out.
func movedStatus(s int) bool {
	return s == http.StatusMovedPermanently || s == http.StatusFound || s == http.StatusTemporaryRedirect || s == http.StatusPermanentRedirect
}

// closedStatus reports whether a status says the target is gone or closed
// to us: 403, 404, 410.
func closedStatus(s int) bool {
	return s == http.StatusForbidden || s == http.StatusNotFound || s == http.StatusGone
}

// Closed reports whether err is a read's answer saying the target is gone
// or closed to us (403, 404, 410), and the status: a target that cannot
// accept a write.
func Closed(err error) (status int, ok bool) {
	var se *StatusError
	if errors.As(err, &se) && closedStatus(se.Status) {
		return se.Status, true
	}
	return 0, false
}

// rateLimited reports whether a 403 is a rate limit, not a verdict on
// the target: GitHub answers its limits with 403 and Retry-After, or
// X-RateLimit-Remaining: 0.
func rateLimited(h http.Header) bool {
	return h.Get("Retry-After") != "" || strings.TrimSpace(h.Get("X-RateLimit-Remaining")) == "0"
}

// waitHint reads how long an answer asks us to wait: Retry-After; else
// Matrix's retry_after_ms in the body (M_LIMIT_EXCEEDED); else, once the
// rate limit is spent (X-RateLimit-Remaining: 0), until X-RateLimit-Reset
// (epoch seconds as GitHub sends it, or an ISO 8601 time as Mastodon does).
func waitHint(h http.Header, body []byte, now time.Time) (time.Duration, bool) {
	if d, ok := RetryAfter(h.Get("Retry-After"), now); ok {
		return d, true
	}
	var m struct {
		RetryAfterMS *int64 `json:"retry_after_ms"`
	}
	if json.Unmarshal(body, &m) == nil && m.RetryAfterMS != nil && *m.RetryAfterMS >= 0 {
		return time.Duration(*m.RetryAfterMS) * time.Millisecond, true
	}
	if strings.TrimSpace(h.Get("X-RateLimit-Remaining")) != "0" {
		return 0, false
	}
	reset := strings.TrimSpace(h.Get("X-RateLimit-Reset"))
	if n, err := strconv.ParseInt(reset, 10, 64); err == nil && n > 0 {
		return max(time.Unix(n, 0).Sub(now), 0), true
	}
	if t, err := time.Parse(time.RFC3339, reset); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// RetryAfter parses a Retry-After header: delay-seconds or an HTTP date.
func RetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// Fingerprinter is implemented by providers whose listing cannot return
// the body exactly as sent (Mastodon renders it to HTML): OwnWrite's
// BodySHA256 is then Fingerprint of the body, and the outbox joins intents
// on Fingerprint of theirs.
type Fingerprinter interface {
	Fingerprint(body []byte) string
}

// Settings reads a lane's settings with defaults.
type Settings map[string]string

// Get returns the setting or def.
func (s Settings) Get(key, def string) string {
	if v, ok := s[key]; ok && v != "" {
		return v
	}
	return def
}

// Token reads a lane's secret: the setting direct when it is set (kept
// apart from the shown settings, see SecretSpec), else the environment
// variable named by the setting envKey (default def). An empty variable is
// an invalid setting.
func (s Settings) Token(direct, envKey, def string, getenv func(string) string) (string, error) {
	if v := s[direct]; v != "" {
		return v, nil
	}
	key := envKey
	name := s.Get(key, def)
	v := getenv(name)
	if v == "" {
		return "", tidemark.Invalidf("setting "+key, name, "the environment variable holding the lane's secret is empty")
	}
	return v, nil
}

// NextLink returns the rel="next" URL of an RFC 8288 Link header.
func NextLink(h http.Header) string {
	for _, part := range strings.Split(h.Get("Link"), ",") {
		segs := strings.Split(part, ";")
		if len(segs) < 2 {
			continue
		}
		u := strings.Trim(strings.TrimSpace(segs[0]), "<>")
		for _, p := range segs[1:] {
			if strings.ReplaceAll(strings.TrimSpace(p), " ", "") == `rel="next"` {
				return u
			}
		}
	}
	return ""
}

// SecretSpec says which of a provider kind's settings are secrets. A
// setting named like a secret (secret, token, password, api_key, …, but not
// an *_env setting, which names a variable) is one whether declared or not,
// and a setting named like a URL (list_url, api_url, …) is a URL setting
// whether declared or not.
type SecretSpec struct {
	// Keys whose whole value is a secret: a signing secret, a token.
	Keys []string
	// URLs: settings holding a URL whose userinfo password and query
	// values are secrets. A value that is not a URL at all (no
	// scheme://) is a secret whole: what it holds cannot be told apart.
	URLs []string
	// OpaqueURLs: settings holding a URL whose path is a secret too (a chat
	// webhook carries its token in the path).
	OpaqueURLs []string
}

// secretName reports whether a setting's name says it holds a secret.
func secretName(key string) bool {
	k := strings.ToLower(key)
	if strings.HasSuffix(k, "_env") {
		return false
	}
	for _, w := range []string{"secret", "token", "password", "passwd", "apikey", "api_key", "private", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// isURL reports whether the setting key holds a URL that is not opaque:
// declared so, or named like one.
func (sp SecretSpec) isURL(key string) bool {
	return slices.Contains(sp.URLs, key) || strings.HasSuffix(strings.ToLower(key), "url")
}

// CheckURLs refuses a URL setting whose value does not parse as an
// absolute URL (scheme://host…), such as one with a #, ?, /, space or "
// unencoded in its password. Nothing could be sent to it, and it could
// not be shown with its secrets told apart: it is refused, shown hidden.
func (sp SecretSpec) CheckURLs(settings map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		v := settings[k]
		if v == "" || strings.Contains(v, redact.Marker) || !(slices.Contains(sp.OpaqueURLs, k) || sp.isURL(k)) {
			continue
		}
		if u, err := url.Parse(v); err != nil || u.Scheme == "" || u.Host == "" {
			return tidemark.Invalidf("setting "+k, redact.Marker, "want an absolute URL such as https://host/path, "+
				"with any #, ?, /, space or quote in its user name or password percent-encoded (%%23, %%3F, %%2F, %%20, %%22)")
		}
	}
	return nil
}

// Split divides settings into what may be shown (every secret replaced by
// redact.Marker) and the secrets, by key, as given. Merge puts them back.
func (sp SecretSpec) Split(settings map[string]string) (shown, secret map[string]string) {
	shown, secret = make(map[string]string, len(settings)), map[string]string{}
	for k, v := range settings {
		s := v
		switch {
		case slices.Contains(sp.Keys, k) || secretName(k):
			if v != "" {
				s = redact.Marker
			}
		case slices.Contains(sp.OpaqueURLs, k):
			s = redact.URL(v, true)
		case sp.isURL(k) && notURL(v):
			s = redact.Marker
		case sp.isURL(k):
			s = redact.URL(v, false)
		}
		shown[k] = s
		if s != v {
			secret[k] = v
		}
	}
	return shown, secret
}

// Values returns every secret value in settings, and the secret pieces of
// its URLs, for cleaning free text (an upstream's error) with redact.Text.
// A value with white space around it is returned trimmed too: a receiver
// trims what it is sent, and echoes it so.
func (sp SecretSpec) Values(settings map[string]string) []string {
	out := sp.values(settings)
	for _, v := range out {
		if t := strings.TrimSpace(v); t != v && t != "" {
			out = append(out, t)
		}
	}
	return out
}

func (sp SecretSpec) values(settings map[string]string) []string {
	var out []string
	for k, v := range settings {
		if v == "" {
			continue
		}
		switch {
		case slices.Contains(sp.Keys, k) || secretName(k):
			out = append(out, v)
		case slices.Contains(sp.OpaqueURLs, k):
			if redact.URL(v, true) != v {
				out = append(out, v)
				out = append(out, redact.URLSecrets(v, true)...)
			}
		case sp.isURL(k) && notURL(v):
			out = append(out, v)
		case sp.isURL(k):
			out = append(out, redact.URLSecrets(v, false)...)
		}
	}
	return out
}

// notURL reports whether v, a URL setting's value, is no URL at all: it
// has no scheme://. Its shown form (redact.Marker) is not one either.
func notURL(v string) bool {
	return v != "" && v != redact.Marker && !schemePrefix.MatchString(v)
}

var schemePrefix = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://`)

// Merge returns the shown settings with the secrets put back.
func Merge(shown, secret map[string]string) map[string]string {
	out := make(map[string]string, len(shown)+len(secret))
	maps.Copy(out, shown)
	maps.Copy(out, secret)
	return out
}
