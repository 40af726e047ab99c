package slack_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
