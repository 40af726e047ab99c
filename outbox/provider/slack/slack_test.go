package slack_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark"

	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/provider/slack"
)

// What Slack returns (its text escaped) has the fingerprint of what was
// sent.
func TestFingerprintSeesThroughSlacksEscaping(t *testing.T) {
	p, err := slack.New(slack.Config{Token: "xoxb-x"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Fingerprint([]byte("a & b <c>  d")) != p.Fingerprint([]byte("a &amp; b &lt;c&gt; d")) {
		t.Fatal("the escaped text does not match the text sent")
	}
	if p.Fingerprint([]byte("a & b")) == p.Fingerprint([]byte("a b")) {
		t.Fatal("different texts share a fingerprint")
	}
}

// Slack returns the links in a text as its link markup (a bare URL as
// <https://…>, a bare domain or address as <http://…|…> or <mailto:…|…>,
// & inside them as &amp;); what was posted and what Slack lists share a
// fingerprint, and texts that differ in what they link to do not.
func TestFingerprintSeesThroughSlacksLinkMarkup(t *testing.T) {
	p, err := slack.New(slack.Config{Token: "xoxb-x"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ posted, listed string }{
		{"*Fourth change sees https://example.org/x?y=1 too*", "*Fourth change sees <https://example.org/x?y=1> too*"},
		{"see https://example.org/x?a=1&b=2.", "see <https://example.org/x?a=1&amp;b=2>."},
		{"docs at example.org", "docs at <http://example.org|example.org>"},
		{"mail bob@example.com", "mail <mailto:bob@example.com|bob@example.com>"},
		{"*<https://wiki.example.org/p|Title &amp; more>*", "*<https://wiki.example.org/p|Title &amp; more>*"},
		{"ask <#C0TIDE1> or <@U123>", "ask <#C0TIDE1|changes> or <@U123>"},
		{"&lt;https://example.org&gt; quoted", "&lt;<https://example.org>&gt; quoted"},
		{"a & b <c>  d", "a &amp; b &lt;c&gt; d"},
	} {
		if p.Fingerprint([]byte(c.posted)) != p.Fingerprint([]byte(c.listed)) {
			t.Errorf("posted %q, listed as %q: fingerprints differ", c.posted, c.listed)
		}
	}
	for _, c := range [][2]string{
		{"<https://a.example/|here>", "<https://b.example/|here>"},
		{"<https://a.example/|here>", "here"},
		{"<#C0TIDE1>", "<#C0TIDE2>"},
	} {
		if p.Fingerprint([]byte(c[0])) == p.Fingerprint([]byte(c[1])) {
			t.Errorf("%q and %q share a fingerprint", c[0], c[1])
		}
	}
}

// Slack answers 200 with ok:false: what the error says decides whether
// the message may have been posted.
func TestPostReadsSlacksEnvelope(t *testing.T) {
	for errName, want := range map[string]func(error) bool{
		"channel_not_found": func(err error) bool { return errors.Is(err, provider.ErrUnexecutable) },
		"is_archived":       func(err error) bool { return errors.Is(err, provider.ErrUnexecutable) },
		"internal_error":    func(err error) bool { var u *provider.UnknownError; return errors.As(err, &u) },
		"msg_too_long":      func(err error) bool { var r *provider.RejectedError; return errors.As(err, &r) },
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"ok":false,"error":"` + errName + `"}`))
		}))
		p, err := slack.New(slack.Config{APIURL: srv.URL, Token: "xoxb-x"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Post(context.Background(), provider.Write{Target: "C0TIDE", Body: []byte("hi")})
		if !want(err) {
			t.Errorf("%s: %v", errName, err)
		}
		srv.Close()
	}
}

// A read the lane needs that Slack refuses for the lane's reason (a token
// without the history scope, a bot not in a listed channel, a revoked
// token) is a refusal of the lane's read that says what to fix: it
// matches tidemark.ErrUnavailable (the lane cannot deliver as it is), not
// an internal error. Slack's own failures are unavailability too.
func TestAReadSlackRefusesIsTheLanes(t *testing.T) {
	for _, c := range []struct {
		answer  string
		refused bool
		says    string
	}{
		{`{"ok":false,"error":"missing_scope","needed":"channels:history","provided":"chat:write"}`, true, "channels:history"},
		{`{"ok":false,"error":"not_in_channel"}`, true, "C0TIDE1"},
		{`{"ok":false,"error":"channel_not_found"}`, true, "C0TIDE1"},
		{`{"ok":false,"error":"token_revoked"}`, true, "token_revoked"},
		{`{"ok":false,"error":"internal_error"}`, false, "internal_error"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "no-store")
			if r.URL.Path == "/auth.test" {
				_, _ = w.Write([]byte(`{"ok":true,"user_id":"U1","bot_id":"B1"}`))
				return
			}
			_, _ = w.Write([]byte(c.answer))
		}))
		p, err := slack.New(slack.Config{APIURL: srv.URL, Token: "xoxb-x", Channels: []string{"C0TIDE1"}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.ListOwn(context.Background(), provider.ListQuery{})
		var rr *provider.ReadRefusedError
		if !errors.Is(err, tidemark.ErrUnavailable) || errors.As(err, &rr) != c.refused || !strings.Contains(fmt.Sprint(err), c.says) {
			t.Errorf("%s: %v; want unavailable (refused by the lane's fault: %v) saying %q", c.answer, err, c.refused, c.says)
		}
		srv.Close()
	}
}

// A listing asked for writes since a time asks Slack for messages from
// then on (oldest=, inclusive), so a busy channel is not read to its start.
func TestAListingSinceATimeUsesSlacksOldest(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Path == "/auth.test" {
			_, _ = w.Write([]byte(`{"ok":true,"user_id":"U1","bot_id":"B1"}`))
			return
		}
		queries = append(queries, r.URL.Query().Get("oldest")+"|"+r.URL.Query().Get("inclusive"))
		_, _ = w.Write([]byte(`{"ok":true,"messages":[]}`))
	}))
	defer srv.Close()
	p, err := slack.New(slack.Config{APIURL: srv.URL, Token: "xoxb-x", Channels: []string{"C0TIDE1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, since := range []time.Time{{}, time.Unix(1764590400, 250_000_000)} {
		if _, err := p.ListOwn(context.Background(), provider.ListQuery{Since: since}); err != nil {
			t.Fatal(err)
		}
	}
	if len(queries) != 2 || queries[0] != "|" || queries[1] != "1764590400.250000|true" {
		t.Fatalf("oldest|inclusive asked: %q; want none, then 1764590400.250000|true", queries)
	}
}

// channel is a Slack channel's conversations.history as Slack serves it:
// newest first, between oldest and latest (each bound kept when inclusive
// is true, else left out), a few messages a page whatever limit asks (Slack
// may return fewer), has_more, and a next_cursor that is Slack's own (here
// an offset into the answer: Slack promises nothing of what a cursor
// holds, nor for how long it lasts). After budget reads it answers 429
// with Retry-After until reset.
type channel struct {
	mu     sync.Mutex
	msgs   []chanMsg // oldest first; ts unique in the channel
	size   int
	budget int
	asked  []url.Values
}

type chanMsg struct {
	ts, botID, user, text string
}

func tsOf(sec, us int64) string { return fmt.Sprintf("%d.%06d", sec, us) }

// tsCmp compares two message ts ("sec.micros").
func tsCmp(a, b string) int {
	var as, au, bs, bu int64
	fmt.Sscanf(a, "%d.%d", &as, &au)
	fmt.Sscanf(b, "%d.%d", &bs, &bu)
	return cmp.Or(cmp.Compare(as, bs), cmp.Compare(au, bu))
}

func (c *channel) post(ts, botID, user, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, chanMsg{ts, botID, user, text})
	slices.SortFunc(c.msgs, func(a, b chanMsg) int { return tsCmp(a.ts, b.ts) })
}

func (c *channel) remove(ts string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = slices.DeleteFunc(c.msgs, func(m chanMsg) bool { return m.ts == ts })
}

func (c *channel) reset(budget int) { c.mu.Lock(); c.budget = budget; c.asked = nil; c.mu.Unlock() }

func (c *channel) queries() []url.Values {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.asked)
}

func (c *channel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Path == "/auth.test" {
		_, _ = w.Write([]byte(`{"ok":true,"user_id":"U1","bot_id":"B1"}`))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	q := r.URL.Query()
	if c.budget == 0 {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"ok":false,"error":"ratelimited"}`))
		return
	}
	c.budget--
	c.asked = append(c.asked, q)
	incl := q.Get("inclusive") == "true" || q.Get("inclusive") == "1"
	var in []chanMsg
	for _, m := range slices.Backward(c.msgs) {
		if o := q.Get("oldest"); o != "" && (tsCmp(m.ts, o) < 0 || !incl && tsCmp(m.ts, o) == 0) {
			continue
		}
		if l := q.Get("latest"); l != "" && (tsCmp(m.ts, l) > 0 || !incl && tsCmp(m.ts, l) == 0) {
			continue
		}
		in = append(in, m)
	}
	off := 0
	if cur := q.Get("cursor"); cur != "" {
		off, _ = strconv.Atoi(cur)
	}
	off = min(off, len(in))
	end := min(off+c.size, len(in))
	out := []map[string]any{}
	for _, m := range in[off:end] {
		msg := map[string]any{"type": "message", "text": m.text, "ts": m.ts}
		if m.botID != "" {
			msg["bot_id"] = m.botID
		} else {
			msg["user"] = m.user
		}
		out = append(out, msg)
	}
	ans := map[string]any{"ok": true, "messages": out, "has_more": end < len(in)}
	if end < len(in) {
		ans["response_metadata"] = map[string]string{"next_cursor": strconv.Itoa(end)}
	}
	_ = json.NewEncoder(w).Encode(ans)
}

// A reconciliation's read of a Slack channel stopped part-way by a rate
// limit (429) goes on, in a later pass, from where it stopped: its cursor
// is the oldest message ts it read (latest=, a keyset no message posted
// or deleted since can move, ts being unique in a channel), not Slack's
// opaque cursor, so the listing can be resumed (provider.Resumable). The
// next pass reads none of the head again, and between them the passes
// show every write of ours exactly once, with messages posted at the head
// and ones already read deleted meanwhile.
func TestASlackReadStoppedByARateLimitGoesOnWhereItStopped(t *testing.T) {
	for _, since := range []time.Time{{}, time.Unix(1764590400, 500_000_000)} {
		t.Run(fmt.Sprint(since.Unix()), func(t *testing.T) {
			ch := &channel{size: 3, budget: 2}
			var ours []string // every write of ours the read must show, oldest first
			for i := range int64(12) {
				ts := tsOf(1764590400+i, 250_000)
				if i%4 == 3 {
					ch.post(ts, "", "U2", "someone else") // not ours
					continue
				}
				ch.post(ts, "B1", "", fmt.Sprint("change ", i))
				if since.IsZero() || !tsTime(ts).Before(since) {
					ours = append(ours, "C0TIDE1/"+ts)
				}
			}
			srv := httptest.NewServer(ch)
			defer srv.Close()
			p, err := slack.New(slack.Config{APIURL: srv.URL, Token: "xoxb-x", Channels: []string{"C0TIDE1"}})
			if err != nil {
				t.Fatal(err)
			}
			if rs, ok := any(p).(provider.Resumable); !ok || rs.ListScope() == "" {
				t.Fatal("a Slack listing cannot be resumed (provider.Resumable)")
			}

			// pass reads on from cursor as a reconciliation does, until the
			// listing ends or Slack asks it to wait; it returns the cursor
			// it stopped at ("" at the end).
			seen := map[string]int{}
			pass := func(cursor string) string {
				t.Helper()
				for {
					pg, err := p.ListOwn(context.Background(), provider.ListQuery{Cursor: cursor, Since: since})
					if se, ok := errors.AsType[*provider.StatusError](err); ok && se.Wait > 0 {
						return cursor
					}
					if err != nil {
						t.Fatal(err)
					}
					for _, w := range pg.Writes {
						seen[w.RemoteID]++
					}
					if pg.Next == "" {
						return ""
					}
					cursor = pg.Next
				}
			}
			kept := pass("")
			if kept == "" {
				t.Fatal("the first pass read to the end; the rate limit should have stopped it")
			}
			first := ch.queries()
			// Meanwhile: a message of ours at the head, and two the first
			// pass read deleted.
			ch.post(tsOf(1764590500, 1), "B1", "", "newer")
			ch.remove(tsOf(1764590411, 250_000))
			ch.remove(tsOf(1764590410, 250_000))
			ch.reset(100)
			if end := pass(kept); end != "" {
				t.Fatalf("the second pass stopped at %q", end)
			}
			for _, q := range ch.queries() {
				if q.Get("latest") == "" {
					t.Errorf("the second pass did not go on from the oldest message the first read (latest=): %v (the first asked %v)", q, first)
				}
				if q.Get("oldest") != "" && q.Get("inclusive") != "true" {
					t.Errorf("a read since a time leaves out the oldest message: %v", q)
				}
			}
			var want []string
			for _, id := range ours {
				want = append(want, id)
				if seen[id] != 1 {
					t.Errorf("write %s read %d times over the two passes, want once", id, seen[id])
				}
			}
			if len(seen) != len(want) {
				t.Errorf("the passes read %v; want exactly %v", seen, want)
			}
		})
	}
}

// tsTime reads a ts as the provider does (to the microsecond).
func tsTime(ts string) time.Time {
	var s, us int64
	fmt.Sscanf(ts, "%d.%d", &s, &us)
	return time.Unix(s, us*1000)
}
