package providers_test

import (
	"bytes"
	"io"
	"net"
	"net/mail"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/tidemark/tidemark/outbox/providertest"
)

// smtpReceiver is an SMTP server on 127.0.0.1 that keeps every mail it
// takes and, on demand, loses the answer to every nth one: it records the
// mail, then closes the connection instead of answering the final dot.
type smtpReceiver struct {
	addr string
	// sent, when set, is the sent mailbox every mail taken is filed into
	// (before its answer is lost or sent), as a submission server does.
	sent *providertest.SentMailbox

	mu      sync.Mutex
	mails   []string // bodies, decoded
	every   int
	killAt  int
	kill    func()
	dropped int
	reused  int
}

func newSMTPReceiver(t *testing.T) *smtpReceiver {
	t.Helper()
	r := &smtpReceiver{}
	s := smtp.NewServer(r)
	s.Domain = "localhost"
	s.AllowInsecureAuth = true
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	return r
}

func (r *smtpReceiver) DropEvery(n int) { r.mu.Lock(); r.every = n; r.mu.Unlock() }
func (r *smtpReceiver) KillAt(n int, kill func()) {
	r.mu.Lock()
	r.killAt, r.kill = n, kill
	r.mu.Unlock()
}
func (r *smtpReceiver) Dropped() int { r.mu.Lock(); defer r.mu.Unlock(); return r.dropped }
func (r *smtpReceiver) Reused() int  { r.mu.Lock(); defer r.mu.Unlock(); return r.reused }

func (r *smtpReceiver) bodies() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.mails...)
}

func (r *smtpReceiver) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &smtpSession{r: r, conn: c.Conn()}, nil
}

type smtpSession struct {
	r     *smtpReceiver
	conn  net.Conn
	mails int
}

func (s *smtpSession) Reset()                                         {}
func (s *smtpSession) Logout() error                                  { return nil }
func (s *smtpSession) Mail(from string, opts *smtp.MailOptions) error { return nil }
func (s *smtpSession) Rcpt(to string, opts *smtp.RcptOptions) error   { return nil }

func (s *smtpSession) Data(rd io.Reader) error {
	raw, err := io.ReadAll(rd)
	if err != nil {
		return err
	}
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if m.Header.Get("Message-ID") == "" {
		return &smtp.SMTPError{Code: 554, Message: "no Message-ID"}
	}
	text, err := mailText(raw)
	if err != nil {
		return &smtp.SMTPError{Code: 554, Message: err.Error()}
	}
	r := s.r
	if r.sent != nil {
		if err := r.sent.Add(raw); err != nil {
			return err
		}
	}
	r.mu.Lock()
	// The data terminator puts a line break after the last line.
	r.mails = append(r.mails, text)
	if s.mails > 0 {
		r.reused++
	}
	s.mails++
	drop := r.every > 0 && len(r.mails)%r.every == 0
	var kill func()
	if r.kill != nil && len(r.mails) == r.killAt {
		kill, drop = r.kill, true
	}
	if drop {
		r.dropped++
	}
	r.mu.Unlock()
	if kill != nil {
		kill()
	}
	if drop {
		s.conn.Close() // taken, but the answer is never sent
	}
	return nil
}
