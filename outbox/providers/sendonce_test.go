package providers_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/outbox/providertest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// receiver is the write-recording side of a fake provider: the body of
// every write it accepted, in order.
type receiver struct {
	mu     sync.Mutex
	clk    clock.Clock
	bodies []string
	at     []time.Time
}

func (r *receiver) record(body string) (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, body)
	r.at = append(r.at, r.clk.Now().UTC())
	return len(r.bodies), r.at[len(r.at)-1]
}

func (r *receiver) snapshot() ([]string, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...), append([]time.Time(nil), r.at...)
}

func (r *receiver) fresh(w http.ResponseWriter) {
	w.Header().Set("Date", r.clk.Now().UTC().Format(http.TimeFormat))
	w.Header().Set("Age", "0")
	w.Header().Set("Content-Type", "application/json")
}

// mastodonReceiver is the part of the Mastodon API the provider uses.
func mastodonReceiver(r *receiver) http.Handler {
	mux := http.NewServeMux()
	status := func(i int, at time.Time, body string) map[string]any {
		return map[string]any{"id": strconv.Itoa(1000 + i), "created_at": at, "content": "<p>" + html.EscapeString(body) + "</p>"}
	}
	mux.HandleFunc("POST /api/v1/statuses", func(w http.ResponseWriter, q *http.Request) {
		if err := q.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		i, at := r.record(q.PostForm.Get("status"))
		r.fresh(w)
		_ = json.NewEncoder(w).Encode(status(i, at, q.PostForm.Get("status")))
	})
	mux.HandleFunc("GET /api/v1/accounts/verify_credentials", func(w http.ResponseWriter, q *http.Request) {
		bodies, _ := r.snapshot()
		r.fresh(w)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "1", "statuses_count": len(bodies)})
	})
	mux.HandleFunc("GET /api/v1/accounts/1/statuses", func(w http.ResponseWriter, q *http.Request) {
		bodies, at := r.snapshot()
		limit, _ := strconv.Atoi(q.URL.Query().Get("limit"))
		maxID := len(bodies) + 1
		if m := q.URL.Query().Get("max_id"); m != "" {
			n, _ := strconv.Atoi(m)
			maxID = n - 1000
		}
		out := []map[string]any{}
		for i := maxID - 1; i >= 1 && len(out) < limit; i-- { // newest first
			out = append(out, status(i, at[i-1], bodies[i-1]))
		}
		r.fresh(w)
		_ = json.NewEncoder(w).Encode(out)
	})
	return mux
}

// githubReceiver is the part of the GitHub API the provider uses, for one
// repository o/r.
func githubReceiver(r *receiver, base *string) http.Handler {
	mux := http.NewServeMux()
	comment := func(i int, at time.Time, body string) map[string]any {
		return map[string]any{"id": i, "body": body, "created_at": at, "issue_url": *base + "/repos/o/r/issues/1",
			"user": map[string]string{"login": "bot"}}
	}
	all := func(w http.ResponseWriter, _ *http.Request) {
		bodies, at := r.snapshot()
		out := []map[string]any{}
		for i, b := range bodies {
			out = append(out, comment(i+1, at[i], b))
		}
		r.fresh(w)
		_ = json.NewEncoder(w).Encode(out)
	}
	mux.HandleFunc("GET /user", func(w http.ResponseWriter, _ *http.Request) {
		r.fresh(w)
		_, _ = w.Write([]byte(`{"login":"bot"}`))
	})
	mux.HandleFunc("GET /repos/o/r/issues/1", func(w http.ResponseWriter, _ *http.Request) {
		r.fresh(w)
		_, _ = w.Write([]byte(`{"locked":false}`))
	})
	mux.HandleFunc("POST /repos/o/r/issues/1/comments", func(w http.ResponseWriter, q *http.Request) {
		var in struct{ Body string }
		if err := json.NewDecoder(q.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		i, at := r.record(in.Body)
		r.fresh(w)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(comment(i, at, in.Body))
	})
	mux.HandleFunc("GET /repos/o/r/issues/comments", all)
	mux.HandleFunc("GET /repos/o/r/issues/1/comments", all)
	return mux
}

// ntfyReceiver is the part of ntfy's API the provider uses, for topics
// whose messages it keeps: publish (POST /<topic>, the body as the
// message) and poll (GET /<topic>/json?poll=1&since=all[&message=…],
// newline-delimited JSON, oldest first).
func ntfyReceiver(r *receiver) http.Handler { return ntfyKeeping(r, 0) }

// ntfyKeeping is ntfyReceiver with a cache duration: a poll shows only
// the messages of the last keep (0: all).
func ntfyKeeping(r *receiver, keep time.Duration) http.Handler {
	mux := http.NewServeMux()
	type msg struct {
		ID      string `json:"id"`
		Time    int64  `json:"time"`
		Event   string `json:"event"`
		Topic   string `json:"topic"`
		Message string `json:"message"`
	}
	topics := map[int]string{}
	var mu sync.Mutex
	mux.HandleFunc("POST /{topic}", func(w http.ResponseWriter, q *http.Request) {
		b, err := io.ReadAll(q.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		i, at := r.record(string(b))
		mu.Lock()
		topics[i] = q.PathValue("topic")
		mu.Unlock()
		r.fresh(w)
		_ = json.NewEncoder(w).Encode(msg{ID: fmt.Sprintf("m%011d", i), Time: at.Unix(), Event: "message", Topic: q.PathValue("topic"), Message: string(b)})
	})
	mux.HandleFunc("GET /{topic}/json", func(w http.ResponseWriter, q *http.Request) {
		// since=all, or a unix time: the messages after it (strictly, the
		// narrower reading of ntfy's docs).
		since, err := strconv.ParseInt(q.URL.Query().Get("since"), 10, 64)
		if q.URL.Query().Get("poll") != "1" || q.URL.Query().Get("since") != "all" && err != nil {
			http.Error(w, "this fake polls everything or since a unix time", http.StatusBadRequest)
			return
		}
		bodies, at := r.snapshot()
		r.fresh(w)
		w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
		enc := json.NewEncoder(w)
		mu.Lock()
		defer mu.Unlock()
		for i, b := range bodies {
			if topics[i+1] != q.PathValue("topic") {
				continue
			}
			if m := q.URL.Query().Get("message"); m != "" && m != b {
				continue
			}
			if keep > 0 && r.clk.Now().Sub(at[i]) > keep {
				continue // expired from ntfy's cache
			}
			if err == nil && at[i].Unix() <= since {
				continue
			}
			_ = enc.Encode(msg{ID: fmt.Sprintf("m%011d", i+1), Time: at[i].Unix(), Event: "message", Topic: topics[i+1], Message: b})
		}
	})
	return mux
}

type setup struct {
	// kind is the provider kind (default: the setup's name).
	kind   string
	target string
	// targetOf, when set, gives the target from the settings (a room the
	// setup made on a real server).
	targetOf func(settings map[string]string) string
	// realClock: the server dates its answers by the real clock, so a
	// test whose crashed writer used the real clock recovers at real time,
	// not an hour later.
	realClock bool
	settings  func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper)
	// counted: the provider has a counter, so a lost answer is decided
	// at once by subtraction; otherwise reconciliation decides it.
	counted bool
	// atMostOnce: nothing can decide a write in doubt; it must stay
	// unresolved, never be sent twice.
	atMostOnce bool
}

// dropper loses the answers to writes that landed (providertest.Dropper
// for HTTP).
type dropper interface {
	DropEvery(n int)
	// KillAt calls kill (a SIGKILL of the writing process) once the nth
	// write was taken, before its answer leaves; the answer is lost.
	KillAt(n int, kill func())
	Dropped() int
	Reused() int
}

// fakes are the receivers of every provider kind, each following the
// provider's documented API, behind a Dropper.
func fakes() map[string]setup {
	all := map[string]setup{
		"webhook": {target: "t1", settings: func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper) {
			t.Setenv("TM_HOOK_SECRET", "s3cret")
			srv := providertest.New(t, env.Clock, []byte("s3cret"))
			s := srv.Settings()
			delete(s, "count_url") // reconciliation, not the counter, decides
			s["secret_env"] = "TM_HOOK_SECRET"
			return s, func() []string {
				var out []string
				for _, w := range srv.Writes() {
					out = append(out, w.Body)
				}
				return out
			}, srv.Dropper
		}},
		"mastodon": {target: "timeline", counted: true, settings: func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper) {
			t.Setenv("TM_MASTODON_TOKEN", "tok")
			r := &receiver{clk: env.Clock}
			srv, d := providertest.NewDropServer(t, mastodonReceiver(r))
			return map[string]string{"base_url": srv.URL, "token_env": "TM_MASTODON_TOKEN"},
				func() []string { b, _ := r.snapshot(); return b }, d
		}},
		"github": {target: "o/r#1", settings: func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper) {
			t.Setenv("TM_GITHUB_TOKEN", "tok")
			r := &receiver{clk: env.Clock}
			var base string
			srv, d := providertest.NewDropServer(t, githubReceiver(r, &base))
			base = srv.URL
			return map[string]string{"api_url": srv.URL, "token_env": "TM_GITHUB_TOKEN", "login": "bot", "repos": "o/r"},
				func() []string { b, _ := r.snapshot(); return b }, d
		}},
		"discord": {target: "channel", settings: func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper) {
			t.Setenv("TM_DISCORD_BOT", "bottok")
			r := &receiver{clk: env.Clock}
			srv, d := providertest.NewDropServer(t, discordReceiver(r))
			return map[string]string{"url": srv.URL + "/api/webhooks/42/hooktoken", "bot_token_env": "TM_DISCORD_BOT", "api_url": srv.URL + "/api/v10"},
				func() []string { b, _ := r.snapshot(); return b }, d
		}},
		"slack": {target: "C0TIDE", settings: func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper) {
			t.Setenv("TM_SLACK_TOKEN", "xoxb-tok")
			r := &receiver{clk: env.Clock}
			srv, d := providertest.NewDropServer(t, slackReceiver(r))
			return map[string]string{"api_url": srv.URL + "/api", "token_env": "TM_SLACK_TOKEN", "channels": "C0TIDE"},
				func() []string { b, _ := r.snapshot(); return b }, d
		}},
		"matrix": {target: "!room:example.org", settings: func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper) {
			t.Setenv("TM_MATRIX_TOKEN", "mtok")
			r := &receiver{clk: env.Clock}
			srv, d := providertest.NewDropServer(t, newMatrixReceiver(r).handler())
			return map[string]string{"homeserver_url": srv.URL, "token_env": "TM_MATRIX_TOKEN", "rooms": "!room:example.org"},
				func() []string { b, _ := r.snapshot(); return b }, d
		}},
		"email": {target: "reader@example.org", atMostOnce: true, settings: func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper) {
			t.Setenv("TM_SMTP_PASSWORD", "pw")
			srv := newSMTPReceiver(t)
			return map[string]string{"smtp_url": "smtp+insecure://" + srv.addr, "from": "tidemark@example.org"},
				srv.bodies, srv
		}},
		"email+imap": {kind: "email", target: "reader@example.org", settings: func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper) {
			srv := newSMTPReceiver(t)
			srv.sent = providertest.NewSentMailbox(t)
			s := srv.sent.Settings()
			s["smtp_url"], s["from"] = "smtp+insecure://"+srv.addr, "tidemark@example.org"
			return s, srv.bodies, srv
		}},
		"ntfy": {target: "alerts", settings: func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper) {
			r := &receiver{clk: env.Clock}
			srv, d := providertest.NewDropServer(t, ntfyReceiver(r))
			return map[string]string{"base_url": srv.URL, "topics": "alerts"},
				func() []string { b, _ := r.snapshot(); return b }, d
		}},
	}
	maps.Copy(all, realServers())
	return all
}

// setupNames lists every setup: one per provider kind (fakes fails the
// test when a kind has none), and the variants of some.
func setupNames(t *testing.T) []string {
	t.Helper()
	all := fakes()
	for _, kind := range providers.Kinds() {
		if _, ok := all[kind]; !ok {
			t.Fatalf("provider kind %s has no receiver in this test", kind)
		}
	}
	return slices.Sorted(maps.Keys(all))
}

func (s setup) targetFor(settings map[string]string) string {
	if s.targetOf != nil {
		return s.targetOf(settings)
	}
	return s.target
}

func (s setup) providerKind(name string) string {
	if s.kind != "" {
		return s.kind
	}
	return name
}

// discordReceiver is the part of Discord's API the provider uses: execute
// a webhook (POST /api/webhooks/{id}/{token}?wait=true, JSON content), get
// the webhook (its channel), and a channel's messages for a bot, newest
// first, paginated with before=.
func discordReceiver(r *receiver) http.Handler {
	mux := http.NewServeMux()
	const hookID, channel = "42", "7"
	msg := func(i int, at time.Time, body string) map[string]any {
		return map[string]any{"id": strconv.Itoa(1000 + i), "channel_id": channel, "content": body, "timestamp": at, "webhook_id": hookID}
	}
	mux.HandleFunc("POST /api/webhooks/42/hooktoken", func(w http.ResponseWriter, q *http.Request) {
		var in struct {
			Content string `json:"content"`
		}
		if err := json.NewDecoder(q.Body).Decode(&in); err != nil || q.URL.Query().Get("wait") != "true" {
			http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
			return
		}
		i, at := r.record(strings.TrimSpace(in.Content))
		r.fresh(w)
		_ = json.NewEncoder(w).Encode(msg(i, at, strings.TrimSpace(in.Content)))
	})
	mux.HandleFunc("GET /api/webhooks/42/hooktoken", func(w http.ResponseWriter, q *http.Request) {
		r.fresh(w)
		_ = json.NewEncoder(w).Encode(map[string]string{"id": hookID, "channel_id": channel})
	})
	mux.HandleFunc("GET /api/v10/channels/7/messages", func(w http.ResponseWriter, q *http.Request) {
		if q.Header.Get("Authorization") != "Bot bottok" {
			http.Error(w, `{"message":"401: Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		bodies, at := r.snapshot()
		limit, _ := strconv.Atoi(q.URL.Query().Get("limit"))
		before := len(bodies) + 1
		if b := q.URL.Query().Get("before"); b != "" {
			n, _ := strconv.Atoi(b)
			before = n - 1000
		}
		out := []map[string]any{}
		for i := before - 1; i >= 1 && len(out) < limit; i-- {
			out = append(out, msg(i, at[i-1], bodies[i-1]))
		}
		r.fresh(w)
		_ = json.NewEncoder(w).Encode(out)
	})
	return mux
}

// slackReceiver is the part of Slack's Web API the provider uses:
// chat.postMessage, auth.test and conversations.history (newest first, up
// to latest=). Like Slack it escapes &, < and > in the text it returns, and
// its answers carry Cache-Control: no-store and no Age.
func slackReceiver(r *receiver) http.Handler {
	mux := http.NewServeMux()
	head := func(w http.ResponseWriter) {
		w.Header().Set("Date", r.clk.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Cache-Control", "private, no-cache, no-store, must-revalidate")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	ts := func(i int, at time.Time) string { return fmt.Sprintf("%d.%06d", at.Unix(), i) }
	authed := func(w http.ResponseWriter, q *http.Request) bool {
		if q.Header.Get("Authorization") != "Bearer xoxb-tok" {
			head(w)
			_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
			return false
		}
		return true
	}
	mux.HandleFunc("POST /api/chat.postMessage", func(w http.ResponseWriter, q *http.Request) {
		if !authed(w, q) {
			return
		}
		var in struct{ Channel, Text string }
		if err := json.NewDecoder(q.Body).Decode(&in); err != nil || in.Channel != "C0TIDE" {
			head(w)
			_, _ = w.Write([]byte(`{"ok":false,"error":"channel_not_found"}`))
			return
		}
		i, at := r.record(in.Text)
		head(w)
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": in.Channel, "ts": ts(i, at),
			"message": map[string]any{"type": "message", "bot_id": "B1", "text": esc.Replace(in.Text), "ts": ts(i, at)}})
	})
	mux.HandleFunc("GET /api/auth.test", func(w http.ResponseWriter, q *http.Request) {
		if authed(w, q) {
			head(w)
			_, _ = w.Write([]byte(`{"ok":true,"user_id":"U1","bot_id":"B1"}`))
		}
	})
	mux.HandleFunc("GET /api/conversations.history", func(w http.ResponseWriter, q *http.Request) {
		if !authed(w, q) {
			return
		}
		bodies, at := r.snapshot()
		limit, _ := strconv.Atoi(q.URL.Query().Get("limit"))
		// Newest first, up to latest (a ts; the message at it too when
		// inclusive).
		latest, inclusive := q.URL.Query().Get("latest"), q.URL.Query().Get("inclusive") == "true"
		upTo := func(t string) bool {
			if latest == "" {
				return true
			}
			c := cmp.Compare(len(t), len(latest))
			if c == 0 {
				c = strings.Compare(t, latest)
			}
			return c < 0 || c == 0 && inclusive
		}
		out := []map[string]any{}
		i := len(bodies)
		for ; i >= 1 && len(out) < limit; i-- {
			if t := ts(i, at[i-1]); upTo(t) {
				out = append(out, map[string]any{"type": "message", "bot_id": "B1", "text": esc.Replace(bodies[i-1]), "ts": t})
			}
		}
		// Someone else's message, older than ours.
		if upTo("1.000001") {
			out = append(out, map[string]any{"type": "message", "user": "U2", "text": "hello", "ts": "1.000001"})
		}
		head(w)
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": out, "has_more": i >= 1})
	})
	return mux
}

// matrixReceiver is the part of the Matrix client-server API the provider
// uses, for one user: send (PUT /rooms/{roomId}/send/{type}/{txnId},
// idempotent per access token and transaction id: a repeated id returns
// the first event and makes none), whoami, and a room's messages with
// dir=b, paginated by from/end tokens. Its answers carry Cache-Control:
// no-store unless fresh is false, when they carry only a Date.
type matrixReceiver struct {
	r     *receiver
	mu    sync.Mutex
	txns  map[string]int // token+txnId → index in r.bodies, from 1
	fresh bool
	sends int
}

func newMatrixReceiver(r *receiver) *matrixReceiver {
	return &matrixReceiver{r: r, txns: map[string]int{}, fresh: true}
}

func (m *matrixReceiver) handler() http.Handler {
	mux := http.NewServeMux()
	head := func(w http.ResponseWriter) {
		w.Header().Set("Date", m.r.clk.Now().UTC().Format(http.TimeFormat))
		m.mu.Lock()
		if m.fresh {
			w.Header().Set("Cache-Control", "no-cache, no-store, must-revalidate")
		}
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
	}
	authed := func(w http.ResponseWriter, q *http.Request) bool {
		if q.Header.Get("Authorization") != "Bearer mtok" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"errcode":"M_UNKNOWN_TOKEN","error":"unknown token"}`))
			return false
		}
		return true
	}
	mux.HandleFunc("PUT /_matrix/client/v3/rooms/{room}/send/{type}/{txn}", func(w http.ResponseWriter, q *http.Request) {
		if !authed(w, q) {
			return
		}
		var c struct{ Msgtype, Body string }
		if err := json.NewDecoder(q.Body).Decode(&c); err != nil || q.PathValue("room") != "!room:example.org" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"errcode":"M_FORBIDDEN"}`))
			return
		}
		key := q.Header.Get("Authorization") + "\x00" + q.PathValue("txn")
		m.mu.Lock()
		m.sends++
		i, seen := m.txns[key]
		m.mu.Unlock()
		if !seen {
			i, _ = m.r.record(c.Body)
			m.mu.Lock()
			m.txns[key] = i
			m.mu.Unlock()
		}
		head(w)
		_ = json.NewEncoder(w).Encode(map[string]string{"event_id": fmt.Sprintf("$ev%d", i)})
	})
	mux.HandleFunc("GET /_matrix/client/v3/account/whoami", func(w http.ResponseWriter, q *http.Request) {
		if authed(w, q) {
			head(w)
			_, _ = w.Write([]byte(`{"user_id":"@bot:example.org"}`))
		}
	})
	mux.HandleFunc("GET /_matrix/client/v3/rooms/{room}/messages", func(w http.ResponseWriter, q *http.Request) {
		if !authed(w, q) {
			return
		}
		if q.URL.Query().Get("dir") != "b" {
			http.Error(w, "this fake pages backwards only", http.StatusBadRequest)
			return
		}
		bodies, at := m.r.snapshot()
		limit, _ := strconv.Atoi(q.URL.Query().Get("limit"))
		from := len(bodies)
		if f := q.URL.Query().Get("from"); f != "" {
			from, _ = strconv.Atoi(strings.TrimPrefix(f, "t"))
		}
		chunk := []map[string]any{}
		i := from
		for ; i >= 1 && len(chunk) < limit; i-- {
			chunk = append(chunk, map[string]any{"event_id": fmt.Sprintf("$ev%d", i), "type": "m.room.message", "sender": "@bot:example.org",
				"origin_server_ts": at[i-1].UnixMilli(), "content": map[string]string{"msgtype": "m.text", "body": bodies[i-1]}})
		}
		chunk = append(chunk, map[string]any{"event_id": "$other", "type": "m.room.message", "sender": "@alice:example.org",
			"origin_server_ts": 1, "content": map[string]string{"msgtype": "m.text", "body": "hi"}})
		ans := map[string]any{"chunk": chunk, "start": fmt.Sprintf("t%d", from)}
		if i >= 1 {
			ans["end"] = fmt.Sprintf("t%d", i)
		}
		head(w)
		_ = json.NewEncoder(w).Encode(ans)
	})
	return mux
}

// TestWritesAreNeverReplayedWhenAnswersAreLost drives the real deliverer
// through each provider against a receiver that records every write and
// then loses the answer to every third one (the connection is closed
// without a word, as after a crash or a proxy timeout). Every intent must
// land exactly once at the receiver: a lost answer is an attempt in doubt
// that the counter or reconciliation decides, never a write the HTTP layer
// sends again.
func TestWritesAreNeverReplayedWhenAnswersAreLost(t *testing.T) {
	const n, every = 30, 3
	kinds := fakes()
	for _, name := range setupNames(t) {
		k := kinds[name]
		kind := k.providerKind(name)
		t.Run(name, func(t *testing.T) {
			sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
				ctx := context.Background()
				env := sqltest.NewEnv(11)
				db := sqltest.MustOpen(t, b, env)
				st := db.Outbox()
				settings, received, dropper := k.settings(t, env)
				// The guarantee the table derives is the one this test holds the lane to.
				if g, err := providers.Guarantee(kind, settings); err != nil || (g.Guarantee == provider.AtMostOnce) != k.atMostOnce {
					t.Fatalf("the lane's derived guarantee is %q (%v), the test expects at most once: %v", g.Guarantee, err, k.atMostOnce)
				}
				if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "lane", Provider: kind, Settings: settings}}); err != nil {
					t.Fatal(err)
				}
				var intents []outbox.Intent
				for i := range n {
					in, err := st.Draft(ctx, outbox.Draft{Lane: "lane", Target: k.targetFor(settings), Body: fmt.Sprintf("write %d of %d", i+1, n)})
					if err != nil {
						t.Fatal(err)
					}
					intents = append(intents, in)
				}
				lane, err := st.Lane(ctx, "lane")
				if err != nil {
					t.Fatal(err)
				}
				prov, err := providers.New(lane, env.Clock)
				if err != nil {
					t.Fatal(err)
				}
				dropper.DropEvery(every)
				d := &outbox.Deliverer{Store: st, Provider: prov, Lane: "lane", Holder: "w", Clock: env.Clock, LeaseTTL: time.Hour}
				if k.atMostOnce {
					left := deliverAll(t, env, st, d, n)
					assertAtMostOnce(t, intents, left, received())
					if dropper.Dropped() == 0 {
						t.Fatal("no answer was lost: the test proves nothing")
					}
					unresolved := 0
					for _, in := range left {
						if in.State == outbox.StateUnresolved {
							unresolved++
						}
					}
					if unresolved != dropper.Dropped() {
						t.Errorf("%d answers lost, %d intents unresolved", dropper.Dropped(), unresolved)
					}
					return
				}
				unknown, reconciled := 0, 0
				for step := 0; ; step++ {
					if step > 20*n {
						t.Fatalf("not done after %d steps", step)
					}
					env.Clock.Advance(time.Second) // an answer dated after the attempt it decides
					s, err := d.Step(ctx)
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					if s.Alert != "" {
						t.Fatalf("step %d: %s", step, s.Alert)
					}
					switch s.Kind {
					case outbox.StepSent:
						if s.Outcome == outbox.OutcomeUnknown {
							unknown++
						}
					case outbox.StepReconciled:
						reconciled++
					case outbox.StepWait:
						env.Clock.Set(*s.Until)
					case outbox.StepIdle:
						left, err := st.ListIntents(ctx, outbox.IntentFilter{Lane: "lane"})
						if err != nil {
							t.Fatal(err)
						}
						done := true
						for _, in := range left {
							done = done && in.State == outbox.StateLanded
						}
						if !done {
							env.Clock.Advance(time.Minute) // the recheck of an unresolved intent
							continue
						}
					}
					if s.Kind == outbox.StepIdle {
						break
					}
				}
				got := map[string]int{}
				bodies := received()
				for _, body := range bodies {
					got[body]++
				}
				for _, in := range intents {
					if got[in.Body] != 1 {
						t.Errorf("intent %q reached the receiver %d times", in.Body, got[in.Body])
					}
				}
				if len(bodies) != n {
					t.Errorf("receiver holds %d writes for %d intents", len(bodies), n)
				}
				if dropper.Dropped() == 0 {
					t.Fatal("no answer was lost: the test proves nothing")
				}
				if r := dropper.Reused(); r != 0 {
					t.Errorf("%d writes went out on a kept-alive connection", r)
				}
				if !k.counted {
					// Each lost answer left its attempt in doubt, and reconciliation decided it.
					if unknown != dropper.Dropped() || reconciled == 0 {
						t.Errorf("%d answers lost, %d attempts in doubt, %d reconciliations", dropper.Dropped(), unknown, reconciled)
					}
				}
			})
		})
	}
}
