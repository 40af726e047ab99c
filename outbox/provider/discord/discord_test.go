package discord_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/provider/discord"
)

func TestTheWebhookURLIsCheckedAndNeverEchoed(t *testing.T) {
	for _, u := range []string{"https://discord.com/api/webhooks/x/SECRETTOKEN", "https://discord.com/api/webhooks/1/SECRETTOKEN?wait=true", "nope"} {
		_, err := discord.New(discord.Config{WebhookURL: u})
		if !errors.Is(err, tidemark.ErrInvalid) || strings.Contains(err.Error(), "SECRETTOKEN") {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// A message over Discord's 2000 characters is refused unsent; the post
// asks for the message back (wait=true).
func TestPostWaitsAndRefusesLongContent(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		_, _ = w.Write([]byte(`{"id":"9","channel_id":"7","content":"hi","webhook_id":"1"}`))
	}))
	defer srv.Close()
	p, err := discord.New(discord.Config{WebhookURL: srv.URL + "/api/webhooks/1/tok"})
	if err != nil {
		t.Fatal(err)
	}
	posted, err := p.Post(context.Background(), provider.Write{Target: "channel", Body: []byte("hi")})
	if err != nil || posted.RemoteID != "9" || len(queries) != 1 || queries[0] != "wait=true" {
		t.Fatalf("post: %+v %v %v", posted, err, queries)
	}
	var rej *provider.RejectedError
	if _, err := p.Post(context.Background(), provider.Write{Target: "channel", Body: []byte(strings.Repeat("é", 2001))}); !errors.As(err, &rej) || len(queries) != 1 {
		t.Fatalf("a long message: %v, %d posts", err, len(queries))
	}
}

// The webhook URL is the lane's credential: Discord's 404 Unknown Webhook
// (code 10015) and 401 Invalid Webhook Token (50027) say every write on
// the lane will be refused, so they are a refusal of the lane's request
// (the lane stops, broken), not a verdict on one intent's target. A 404
// for anything else is still the target's.
func TestAGoneWebhookRefusesTheLane(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		lane   bool
	}{
		{http.StatusNotFound, `{"message": "Unknown Webhook", "code": 10015}`, true},
		{http.StatusUnauthorized, `{"message": "Invalid Webhook Token", "code": 50027}`, true},
		{http.StatusNotFound, `{"message": "Invalid Webhook Token", "code": 50027}`, true},
		{http.StatusNotFound, `{"message": "Unknown Channel", "code": 10003}`, false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(c.body))
		}))
		p, err := discord.New(discord.Config{WebhookURL: srv.URL + "/api/webhooks/1/tok"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Post(context.Background(), provider.Write{Target: "channel", Body: []byte("hi")})
		var rej *provider.RejectedError
		switch {
		case c.lane && (!errors.As(err, &rej) || rej.Unsendable() || errors.Is(err, provider.ErrUnexecutable)):
			t.Errorf("%d %s: %v; want a refusal of the lane's request", c.status, c.body, err)
		case !c.lane && !errors.Is(err, provider.ErrUnexecutable):
			t.Errorf("%d %s: %v; want the target's verdict", c.status, c.body, err)
		}
		srv.Close()
	}
}
