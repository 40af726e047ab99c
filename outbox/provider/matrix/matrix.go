// Package matrix sends messages to Matrix rooms through the client-server
// API: PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}.
// The transaction id is the intent's idempotency key, and the homeserver
// makes a send idempotent per access token (device) and transaction id: a
// send repeated with the same id returns the first event and makes no new
// one. Homeservers keep transaction ids for a while only (Synapse and
// Dendrite: about 30 minutes), so a write in doubt for longer is decided by
// the ordered read of our own writes: the room's messages (GET
// /rooms/{roomId}/messages?dir=b) sent by our user, matched on the SHA-256
// of content.body, which the homeserver returns as sent.
//
// Each message carries its text as body and provider.TextHTML of it as
// formatted_body (org.matrix.custom.html) while both fit in one event.
//
// Target is a room id (!opaque:server); there is no parent.
package matrix

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

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox/provider"
)

const (
	// TxnWindow is how long homeservers are known to keep a transaction id
	// (Synapse's and Dendrite's transaction caches: 30 minutes).
	TxnWindow = 30 * time.Minute
	// DefaultMinGap follows Synapse's default message rate limit
	// (rc_message: 0.2 a second, bursts of 10).
	DefaultMinGap = 5 * time.Second
	// MaxBodyBytes keeps an event under the 65,536-byte limit the spec
	// puts on a whole event, with room for its envelope.
	MaxBodyBytes = 60000
	pageSize     = 100
)

// Config configures a Matrix lane.
type Config struct {
	HomeserverURL string // https://matrix.example
	Token         string // an access token of the sending user's device
	UserID        string // looked up with /account/whoami when empty
	Rooms         []string
	Client        *http.Client
	Clock         clock.Clock
}

// FromSettings builds a Config from a lane's settings: homeserver_url,
// token or token_env (default MATRIX_TOKEN), user_id, rooms
// (comma-separated room ids, for reconciliation).
func FromSettings(s map[string]string) (Config, error) {
	st := provider.Settings(s)
	tok, err := st.Token("token", "token_env", "MATRIX_TOKEN", os.Getenv)
	if err != nil {
		return Config{}, err
	}
	c := Config{HomeserverURL: st.Get("homeserver_url", ""), Token: tok, UserID: st.Get("user_id", "")}
	for _, r := range strings.Split(st.Get("rooms", ""), ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.Rooms = append(c.Rooms, r)
		}
	}
	return c, nil
}

// Provider is a Matrix lane.
type Provider struct {
	// Probe: the listing is the read.
	provider.NoProbe
	// Count: Matrix has no counter of our events.
	provider.NoCount
	c  Config
	w  *provider.WriteClient
	mu sync.Mutex
	me string
}

var roomRE = regexp.MustCompile(`^![^:\s]+:\S+$`)

// New checks cfg and returns the provider.
func New(cfg Config) (*Provider, error) {
	if u, err := url.Parse(cfg.HomeserverURL); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, tidemark.Invalidf("setting homeserver_url", cfg.HomeserverURL, "want https://host")
	}
	cfg.HomeserverURL = strings.TrimRight(cfg.HomeserverURL, "/")
	if cfg.Token == "" {
		return nil, tidemark.Invalidf("token", "", "a Matrix lane needs an access token")
	}
	for _, r := range cfg.Rooms {
		if !roomRE.MatchString(r) {
			return nil, tidemark.Invalidf("setting rooms", r, "want room ids such as !abc:example.org")
		}
	}
	w := provider.HTTPDefaults(&cfg.Client, &cfg.Clock)
	return &Provider{NoProbe: "matrix", NoCount: "matrix", c: cfg, w: w, me: cfg.UserID}, nil
}

var _ provider.Provider = (*Provider)(nil)

func (p *Provider) url(path string, q url.Values) string {
	u := p.c.HomeserverURL + "/_matrix/client/v3" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// Post implements provider.Provider: one m.room.message event sent with
// the intent's idempotency key as its transaction id.
func (p *Provider) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	if !roomRE.MatchString(w.Target) {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("target %q is not a Matrix room id", w.Target)}
	}
	if w.Parent != "" {
		return provider.Posted{}, &provider.RejectedError{Body: "Matrix replies are not supported"}
	}
	if w.IdempotencyKey == "" {
		// Without it the send is not idempotent, and the guarantee this
		// provider declares would not hold.
		return provider.Posted{}, &provider.RejectedError{Body: "a Matrix send needs the intent's idempotency key as its transaction id"}
	}
	if len(w.Body) > MaxBodyBytes {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("the message is %d bytes; a Matrix event holds at most %d", len(w.Body), MaxBodyBytes)}
	}
	// m.mentions, empty: the message mentions no one (the spec's
	// intentional mentions, v1.7), so a homeserver that implements them
	// notifies no user and no room from the words of its body.
	content := map[string]any{"msgtype": "m.text", "body": string(w.Body), "m.mentions": struct{}{}}
	// The HTML rendering goes beside the text while the event stays in
	// bounds; the body, what the listing joins on, is the same either way.
	if h := provider.TextHTML(string(w.Body)); len(w.Body)+len(h) <= MaxBodyBytes {
		content["format"], content["formatted_body"] = "org.matrix.custom.html", h
	}
	body, _ := json.Marshal(content)
	path := "/rooms/" + url.PathEscape(w.Target) + "/send/m.room.message/" + url.PathEscape(w.IdempotencyKey)
	req, err := http.NewRequest(http.MethodPut, p.url(path, nil), bytes.NewReader(body))
	if err != nil {
		return provider.Posted{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.c.Token)
	ans, err := p.w.Post(ctx, p.c.Clock.Now, req)
	if err != nil {
		return provider.Posted{}, err
	}
	var ev struct {
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal(ans, &ev); err != nil {
		return provider.Posted{}, nil // it landed; its id is unreadable
	}
	return provider.Posted{RemoteID: ev.EventID}, nil
}

func (p *Provider) get(ctx context.Context, path string, q url.Values, v any) (provider.Meta, error) {
	req, err := http.NewRequest(http.MethodGet, p.url(path, q), nil)
	if err != nil {
		return provider.Meta{}, err
	}
	req.Header.Set("Authorization", "Bearer "+p.c.Token)
	meta, _, err := provider.GetJSON(ctx, p.c.Client, p.c.Clock.Now, req, v)
	return meta, err
}

func (p *Provider) userID(ctx context.Context) (string, error) {
	p.mu.Lock()
	me := p.me
	p.mu.Unlock()
	if me != "" {
		return me, nil
	}
	var who struct {
		UserID string `json:"user_id"`
	}
	if _, err := p.get(ctx, "/account/whoami", nil, &who); err != nil {
		return "", err
	}
	if who.UserID == "" {
		return "", errors.New("matrix: whoami named no user")
	}
	p.mu.Lock()
	p.me = who.UserID
	p.mu.Unlock()
	return who.UserID, nil
}

type event struct {
	EventID string `json:"event_id"`
	Type    string `json:"type"`
	Sender  string `json:"sender"`
	TS      int64  `json:"origin_server_ts"`
	Content struct {
		Body string `json:"body"`
	} `json:"content"`
}

// Covers implements provider.Covering: the listing reads the rooms the
// lane names, and no other.
func (p *Provider) Covers(target, _ string) bool { return slices.Contains(p.c.Rooms, target) }

// KeyScope implements provider.KeyScoped: a homeserver keeps transaction
// ids per access token (per device, since Matrix 1.7), so a new token is a
// new scope.
func (p *Provider) KeyScope() string {
	return provider.ScopeDigest("matrix", p.c.HomeserverURL, p.c.Token)
}

// ListScope implements provider.Resumable: the listing's cursor is a
// room's index among rooms and the homeserver's pagination token, a
// position in the room's timeline that events sent or redacted since do
// not move.
func (p *Provider) ListScope() string {
	if len(p.c.Rooms) == 0 {
		return "" // nothing to list
	}
	return provider.ScopeDigest("matrix", p.c.HomeserverURL, p.c.Token, p.c.UserID, strings.Join(p.c.Rooms, ","))
}

// ListOwn implements provider.Provider: each configured room's messages,
// newest first (dir=b), paginated by the server's tokens, filtered to our
// user. The cursor is "room-index" or "room-index|from-token".
func (p *Provider) ListOwn(ctx context.Context, lq provider.ListQuery) (provider.Page, error) {
	cursor := lq.Cursor
	if len(p.c.Rooms) == 0 {
		return provider.Page{}, fmt.Errorf("matrix: no rooms configured to list: %w", provider.ErrUnsupported)
	}
	me, err := p.userID(ctx)
	if err != nil {
		return provider.Page{}, err
	}
	at, err := provider.ParsePageTargets("matrix", cursor, len(p.c.Rooms))
	if err != nil {
		return provider.Page{}, err
	}
	from := at.Token
	room := p.c.Rooms[at.Index]
	q := url.Values{"dir": {"b"}, "limit": {fmt.Sprint(pageSize)}}
	if from != "" {
		q.Set("from", from)
	}
	var ans struct {
		Chunk []event `json:"chunk"`
		End   string  `json:"end"`
	}
	meta, err := p.get(ctx, "/rooms/"+url.PathEscape(room)+"/messages", q, &ans)
	if err != nil {
		return provider.Page{}, err
	}
	page := provider.Page{Meta: meta}
	for _, e := range ans.Chunk {
		if e.Type != "m.room.message" || e.Sender != me {
			continue
		}
		page.Writes = append(page.Writes, provider.OwnWrite{RemoteID: e.EventID, CreatedAt: time.UnixMilli(e.TS).UTC(), Target: room,
			HasParent: true, BodySHA256: provider.BodySHA256([]byte(e.Content.Body))})
	}
	// Backwards: past an event older than Since, the room has no more to
	// show, and the next room is read.
	older := len(ans.Chunk) > 0 && time.UnixMilli(ans.Chunk[len(ans.Chunk)-1].TS).Before(lq.Since)
	page.Next = at.Next(ans.End != "" && len(ans.Chunk) > 0 && ans.End != from && !older, ans.End)
	return page, nil
}

// CanWrite implements provider.Provider: a room id; a room we cannot send
// to answers the send with 403 and the intent is bucketed then.
func (p *Provider) CanWrite(ctx context.Context, target, parent string) (provider.Writable, error) {
	if !roomRE.MatchString(target) {
		return provider.Writable{Reason: fmt.Sprintf("target %q is not a Matrix room id: give the room's id (!…:server, "+
			"in the room's settings under Advanced), not an alias (#…:server)", target)}, nil
	}
	return provider.Writable{OK: true}, nil
}
