package slack_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

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
