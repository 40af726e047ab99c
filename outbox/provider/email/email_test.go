package email_test

import (
	"errors"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox/provider/email"
)

// The Message-ID comes from the intent's key alone: every attempt at one
// intent carries the same one, and two intents never share it.
func TestMessageIDIsTheIntentsKey(t *testing.T) {
	p, err := email.New(email.Config{SMTPURL: "smtps://mail.example.org", From: "Tide <tide@example.org>"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.MessageID("tm-abc"); got != "<tm-abc@example.org>" {
		t.Fatalf("Message-ID %q", got)
	}
	if p.MessageID("tm-abc") == p.MessageID("tm-abd") {
		t.Fatal("two keys share a Message-ID")
	}
}

func TestSettingsAreChecked(t *testing.T) {
	for _, c := range []email.Config{
		{SMTPURL: "http://mail.example.org", From: "a@example.org"},
		{SMTPURL: "smtp+insecure://127.0.0.1", From: "a@example.org"},
		{SMTPURL: "smtp://mail.example.org", From: "not an address"},
	} {
		if _, err := email.New(c); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if _, err := email.FromSettings(map[string]string{"username": "a", "password_env": "TM_UNSET_SMTP_PASSWORD"}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Errorf("an empty password variable: %v", err)
	}
}
