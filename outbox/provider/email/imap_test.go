package email_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/provider/email"
	"github.com/tidemark/tidemark/outbox/providertest"
)

func mustIMAPProvider(t *testing.T, box *providertest.SentMailbox) *email.Provider {
	t.Helper()
	s := box.Settings()
	s["smtp_url"], s["from"] = "smtp+insecure://127.0.0.1:1", "Tide <tide@example.org>"
	c, err := email.FromSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := email.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func rawMail(id, to, body string) []byte {
	return []byte("From: tide@example.org\r\nTo: " + to + "\r\nSubject: s\r\nMessage-ID: " + id +
		"\r\nDate: Mon, 30 Nov 2026 10:00:00 +0000\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" +
		strings.ReplaceAll(body, "\n", "\r\n") + "\r\n")
}

// The listing reads the sent mailbox in UID order, page by page, keeps
// only mails whose Message-ID is one of ours at our domain, and gives each
// the fingerprint the outbox joins intents on.
func TestListOwnReadsOurMailsFromTheSentMailbox(t *testing.T) {
	box := providertest.NewSentMailbox(t)
	p := mustIMAPProvider(t, box)
	const n = 120 // more than two pages
	for i := range n {
		if err := box.Add(rawMail(fmt.Sprintf("<tm-%040x@example.org>", i), "reader@example.org", fmt.Sprintf("mail %d\n\nline", i))); err != nil {
			t.Fatal(err)
		}
		if i%40 == 0 { // someone else's mails, and ours at another domain
			_ = box.Add(rawMail("<hand-written@example.org>", "friend@example.org", "hi"))
			_ = box.Add(rawMail(fmt.Sprintf("<tm-%040x@elsewhere.example>", i), "reader@example.org", "other sender"))
		}
	}
	var got []provider.OwnWrite
	cursor, pages := "", 0
	for {
		pg, err := p.ListOwn(context.Background(), provider.ListQuery{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if pg.Meta.Age != "0" || pg.Meta.Date == "" {
			t.Fatalf("a live session's answer carries no proof of age: %+v", pg.Meta)
		}
		got = append(got, pg.Writes...)
		if pg.Next == "" {
			break
		}
		cursor = pg.Next
	}
	if len(got) != n || pages < 3 {
		t.Fatalf("%d own mails in %d pages, want %d in at least 3", len(got), pages, n)
	}
	for i, w := range got {
		if want := p.Fingerprint(fmt.Appendf(nil, "mail %d\n\nline", i)); w.BodySHA256 != want || w.Target != "reader@example.org" || !w.HasParent {
			t.Fatalf("own mail %d: %+v", i, w)
		}
		if w.RemoteID != fmt.Sprintf("<tm-%040x@example.org>", i) {
			t.Fatalf("own mail %d has Message-ID %s", i, w.RemoteID)
		}
	}
}

func TestWithoutASentMailboxNothingIsListed(t *testing.T) {
	p, err := email.New(email.Config{SMTPURL: "smtps://mail.example.org", From: "tide@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ListOwn(context.Background(), provider.ListQuery{}); !errors.Is(err, provider.ErrUnsupported) {
		t.Fatalf("ListOwn without imap_url: %v", err)
	}
	if _, err := email.New(email.Config{SMTPURL: "smtps://mail.example.org", From: "tide@example.org", IMAPURL: "pop3://x"}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("a bad imap_url: %v", err)
	}
}

func TestASentMailboxNeedsItsPassword(t *testing.T) {
	_, err := email.FromSettings(map[string]string{"smtp_url": "smtps://mail.example.org", "from": "a@example.org",
		"imap_url": "imaps://mail.example.org", "imap_username": "reader"})
	if !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("a sent mailbox without a password: %v", err)
	}
}
