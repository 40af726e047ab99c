package email_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/provider/email"
)

// refusing is an SMTP server that refuses some recipients as its Rcpt
// says, and takes every other mail.
type refusing map[string]*smtp.SMTPError

func (r refusing) NewSession(*smtp.Conn) (smtp.Session, error) { return refusingSession(r), nil }

type refusingSession refusing

func (refusingSession) Reset()                               {}
func (refusingSession) Logout() error                        { return nil }
func (refusingSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s refusingSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if e, ok := s[to]; ok {
		return e
	}
	return nil
}
func (refusingSession) Data(r io.Reader) error { _, err := io.Copy(io.Discard, r); return err }

// A recipient the server says does not exist (5.1.x, addressing status)
// is that intent's target unable to take mail; any other 5xx (here a
// relay refused for want of authentication) is the lane's refusal, which
// stops the lane instead of giving up on every mail in turn.
func TestRecipientRefusalsAreTheTargetsOrTheLanes(t *testing.T) {
	srv := smtp.NewServer(refusing{
		"gone@example.org":  {Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"},
		"other@example.net": {Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "relaying denied: authenticate first"},
	})
	srv.Domain = "localhost"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	p, err := email.New(email.Config{SMTPURL: "smtp+insecure://" + l.Addr().String(), From: "tide@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	post := func(to string) error {
		_, err := p.Post(context.Background(), provider.Write{Target: to, Body: []byte("hello\n\nbody"), IdempotencyKey: "tm-" + to})
		return err
	}
	if err := post("gone@example.org"); !errors.Is(err, provider.ErrUnexecutable) {
		t.Errorf("550 5.1.1 to a recipient: %v, want its target unexecutable", err)
	}
	var rej *provider.RejectedError
	if err := post("other@example.net"); !errors.As(err, &rej) || rej.Status != 550 || rej.Unsendable() {
		t.Errorf("550 5.7.1 to a recipient: %v, want the lane's refusal (status 550)", err)
	}
	if err := post("ok@example.org"); err != nil {
		t.Errorf("a mail the server takes: %v", err)
	}
}
