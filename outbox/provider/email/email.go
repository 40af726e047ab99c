// Package email sends each write as a mail over SMTP
// (github.com/emersion/go-smtp): its text, with an HTML rendering of it
// beside (multipart/alternative). Its Message-ID is derived from the
// intent's idempotency key, so every attempt at one intent carries the same
// Message-ID, and a mailbox (or a person) can tell a resend from a new mail.
//
// SMTP servers do not deduplicate by Message-ID. Where the lane names a
// sent mailbox over IMAP (imap_url, sent_mailbox) that the submission
// server files what it takes into (as Gmail, Fastmail and most hosted
// providers do), a mail in doubt is decided by reading that mailbox back
// in a live session: our mails are the ones whose Message-ID is ours, and
// the lane is exactly once. Without it nothing can tell whether a mail
// whose final answer was lost was taken, so the lane is at most once: it
// is never sent again and stays unresolved until an operator decides (or
// the lane opts in to resend_in_doubt, at least once). A mailbox a client
// appends its own copies to is not such a mailbox: a mail the server took
// before the client crashed would be missing from it, and sent again.
//
// An answer that says the mail was not taken (any reply before the final
// dot, or a 4xx/5xx after it) means it did not land: 4xx is deferred, 5xx
// refused. No connection, or one lost before the final dot, is not sent
// (provider.NotSentError): a server takes no mail without the dot. Only a
// connection lost after the final dot leaves it in doubt.
//
// Target is the recipient address; there is no parent. The subject is the
// body's first line.
package email

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox/provider"
)

const (
	// DefaultMinGap keeps a lane well under common submission limits
	// (hosted providers allow from about 20 to 100 messages a minute).
	DefaultMinGap = 5 * time.Second
	maxSubject    = 200
	// MaxBodyBytes bounds one mail's text.
	MaxBodyBytes = 1 << 20
)

// Config configures an email lane.
type Config struct {
	// SMTPURL is smtp://host:587 (STARTTLS required), smtps://host:465
	// (implicit TLS), or smtp+insecure://host:port (plain text: tests and
	// local relays only).
	SMTPURL  string
	Username string
	Password string
	From     string
	Timeout  time.Duration
	// TLSConfig is for tests; nil uses the system's roots.
	TLSConfig *tls.Config
	Clock     clock.Clock

	// IMAPURL, when set, is where the sent mailbox is read back:
	// imaps://host:993, imap://host:143 (STARTTLS required) or
	// imap+insecure://host:port (tests only).
	IMAPURL      string
	IMAPUsername string
	IMAPPassword string
	// SentMailbox is the mailbox the submission server files sent mail
	// into (default DefaultSentMailbox).
	SentMailbox string
}

// FromSettings builds a Config from a lane's settings: smtp_url, username,
// password or password_env (default SMTP_PASSWORD; only when username is
// set), from, timeout, and for reading the sent mailbox back: imap_url,
// imap_username (default username), imap_password or imap_password_env
// (default IMAP_PASSWORD; when neither is set, the SMTP password),
// sent_mailbox (default Sent).
func FromSettings(s map[string]string) (Config, error) {
	st := provider.Settings(s)
	c := Config{SMTPURL: s["smtp_url"], Username: s["username"], From: s["from"], Timeout: 30 * time.Second,
		IMAPURL: s["imap_url"], IMAPUsername: st.Get("imap_username", s["username"]), SentMailbox: st.Get("sent_mailbox", DefaultSentMailbox)}
	if c.Username != "" {
		pw, err := st.Token("password", "password_env", "SMTP_PASSWORD", os.Getenv)
		if err != nil {
			return c, err
		}
		c.Password = pw
	}
	if c.IMAPURL != "" {
		switch {
		case s["imap_password"] != "" || s["imap_password_env"] != "":
			pw, err := st.Token("imap_password", "imap_password_env", "IMAP_PASSWORD", os.Getenv)
			if err != nil {
				return c, err
			}
			c.IMAPPassword = pw
		case c.IMAPUsername == c.Username:
			c.IMAPPassword = c.Password
		}
		if c.IMAPUsername == "" {
			return c, tidemark.Invalidf("setting imap_username", "", "reading the sent mailbox needs a user (imap_username or username)")
		}
		if c.IMAPPassword == "" {
			return c, tidemark.Invalidf("setting imap_password", "", "reading the sent mailbox as %s needs its password (imap_password or imap_password_env)", c.IMAPUsername)
		}
	}
	if v := s["timeout"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, tidemark.Invalidf("setting timeout", v, "want a positive duration")
		}
		c.Timeout = d
	}
	return c, nil
}

// Provider is an email lane.
type Provider struct {
	// Probe: the listing of the sent mailbox is the read.
	provider.NoProbe
	// Count: SMTP has no counter.
	provider.NoCount
	c      Config
	scheme string
	addr   string
	from   *mail.Address
	imap   *imapConfig // nil: no sent mailbox to read
}

// New checks cfg and returns the provider.
func New(cfg Config) (*Provider, error) {
	u, err := url.Parse(cfg.SMTPURL)
	if err != nil || u.Host == "" {
		return nil, tidemark.Invalidf("setting smtp_url", cfg.SMTPURL, "want smtp://host:587, smtps://host:465 or smtp+insecure://host:port")
	}
	addr := u.Host
	switch u.Scheme {
	case "smtp":
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "587")
		}
	case "smtps":
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "465")
		}
	case "smtp+insecure":
		if u.Port() == "" {
			return nil, tidemark.Invalidf("setting smtp_url", cfg.SMTPURL, "smtp+insecure needs a port")
		}
	default:
		return nil, tidemark.Invalidf("setting smtp_url", cfg.SMTPURL, "want smtp://, smtps:// or smtp+insecure://")
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, tidemark.Invalidf("setting from", cfg.From, "want an address: %v", err)
	}
	ic, err := parseIMAPURL(cfg.IMAPURL)
	if err != nil {
		return nil, err
	}
	if cfg.SentMailbox == "" {
		cfg.SentMailbox = DefaultSentMailbox
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	return &Provider{NoProbe: "email", NoCount: "email", c: cfg, scheme: u.Scheme, addr: addr, from: from, imap: ic}, nil
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.Fingerprinter = (*Provider)(nil)
)

// MessageID is the Message-ID of an intent's mail: its idempotency key at
// the sender's domain.
func (p *Provider) MessageID(key string) string {
	return "<" + key + "@" + p.domain() + ">"
}

// compose renders the mail: headers, then the body as quoted-printable
// UTF-8 text and its HTML rendering, as multipart/alternative.
func (p *Provider) compose(to *mail.Address, w provider.Write) ([]byte, error) {
	subject, _, _ := strings.Cut(strings.TrimSpace(string(w.Body)), "\n")
	subject = strings.TrimSpace(subject)
	if r := []rune(subject); len(r) > maxSubject {
		subject = string(r[:maxSubject]) + "…"
	}
	var b bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	h("From", p.from.String())
	h("To", to.String())
	h("Subject", mime.QEncoding.Encode("utf-8", subject))
	h("Date", p.c.Clock.Now().Format(time.RFC1123Z))
	h("Message-ID", p.MessageID(w.IdempotencyKey))
	h("MIME-Version", "1.0")
	// The text and provider.TextHTML of it, as alternatives; the boundary
	// comes from the intent's key, so every attempt sends the same bytes.
	boundary := "tidemark-" + strings.TrimPrefix(w.IdempotencyKey, "tm-")
	h("Content-Type", `multipart/alternative; boundary="`+boundary+`"`)
	b.WriteString("\r\n")
	for _, part := range []struct{ ctype, text string }{
		{"text/plain", string(w.Body)},
		{"text/html", "<!DOCTYPE html><html><body>" + provider.TextHTML(string(w.Body)) + "</body></html>"},
	} {
		b.WriteString("--" + boundary + "\r\n")
		h("Content-Type", part.ctype+"; charset=utf-8")
		h("Content-Transfer-Encoding", "quoted-printable")
		b.WriteString("\r\n")
		qp := quotedprintable.NewWriter(&b)
		if _, err := qp.Write([]byte(strings.ReplaceAll(part.text, "\n", "\r\n"))); err != nil {
			return nil, err
		}
		if err := qp.Close(); err != nil {
			return nil, err
		}
		b.WriteString("\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return b.Bytes(), nil
}

// notLanded: the server had not taken the mail when this went wrong.
func (p *Provider) notLanded(step string, err error) error {
	var se *smtp.SMTPError
	if errors.As(err, &se) && se.Code >= 500 {
		if step == "RCPT TO" && se.EnhancedCode[0] == 5 && se.EnhancedCode[1] == 1 {
			// 5.1.x (RFC 3463: addressing status): this address cannot
			// take mail. Any other refusal (authentication, the sender,
			// relaying, the message) is the lane's and stops it.
			return fmt.Errorf("%w: %s: %d %d.%d.%d %s", provider.ErrUnexecutable, step, se.Code,
				se.EnhancedCode[0], se.EnhancedCode[1], se.EnhancedCode[2], se.Message)
		}
		return &provider.RejectedError{Status: se.Code, Body: step + ": " + se.Message}
	}
	if se != nil {
		// A 4xx: the server asks to be tried later.
		return &provider.RetryAfterError{Status: 0, After: time.Minute}
	}
	// No connection, or one that failed before the final dot: a server
	// takes no mail without it, so it did not land and is sent again
	// later, as a write that never left is.
	return &provider.NotSentError{Err: fmt.Errorf("smtp %s: %s: %w", p.addr, step, err)}
}

// Post implements provider.Provider: one SMTP transaction on a connection
// of its own. Nothing retries it.
func (p *Provider) Post(ctx context.Context, w provider.Write) (provider.Posted, error) {
	if w.Parent != "" {
		return provider.Posted{}, &provider.RejectedError{Body: "mail has no parent"}
	}
	to, err := mail.ParseAddress(w.Target)
	if err != nil {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("target %q is not an address", w.Target)}
	}
	if w.IdempotencyKey == "" {
		return provider.Posted{}, &provider.RejectedError{Body: "a mail needs the intent's idempotency key for its Message-ID"}
	}
	if len(w.Body) > MaxBodyBytes {
		return provider.Posted{}, &provider.RejectedError{Body: fmt.Sprintf("the mail is %d bytes; at most %d", len(w.Body), MaxBodyBytes)}
	}
	msg, err := p.compose(to, w)
	if err != nil {
		return provider.Posted{}, err
	}
	c, err := p.dial(ctx)
	if err != nil {
		return provider.Posted{}, p.notLanded("connect", err)
	}
	defer c.Close()
	if p.c.Username != "" {
		if err := c.Auth(sasl.NewPlainClient("", p.c.Username, p.c.Password)); err != nil {
			return provider.Posted{}, p.notLanded("auth", err)
		}
	}
	if err := c.Mail(p.from.Address, nil); err != nil {
		return provider.Posted{}, p.notLanded("MAIL FROM", err)
	}
	if err := c.Rcpt(to.Address, nil); err != nil {
		return provider.Posted{}, p.notLanded("RCPT TO", err)
	}
	dw, err := c.Data()
	if err != nil {
		return provider.Posted{}, p.notLanded("DATA", err)
	}
	if _, err := dw.Write(msg); err != nil {
		return provider.Posted{}, p.notLanded("message", err)
	}
	sentAt := p.c.Clock.Now()
	// Close sends the final dot and reads the answer: from here a lost
	// connection leaves the mail in doubt.
	if err := dw.Close(); err != nil {
		var se *smtp.SMTPError
		if errors.As(err, &se) {
			return provider.Posted{}, p.notLanded("end of data", err)
		}
		return provider.Posted{}, &provider.UnknownError{Err: fmt.Errorf("smtp %s: end of data: %w", p.addr, err)}
	}
	_ = c.Quit() // the mail is taken; a failed QUIT changes nothing
	return provider.Posted{RemoteID: p.MessageID(w.IdempotencyKey), CreatedAt: sentAt}, nil
}

// WriteBound implements provider.Bounded: a mail is sent within the dial's
// timeout and then the conversation's deadline, each the timeout setting.
func (p *Provider) WriteBound() time.Duration { return 2 * p.c.Timeout }

func (p *Provider) dial(ctx context.Context) (*smtp.Client, error) {
	d := net.Dialer{Timeout: p.c.Timeout}
	dctx, cancel := context.WithTimeout(ctx, p.c.Timeout)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(p.c.Timeout))
	tc := p.c.TLSConfig
	if tc == nil {
		host, _, _ := net.SplitHostPort(p.addr)
		tc = &tls.Config{ServerName: host}
	}
	switch p.scheme {
	case "smtps":
		return smtp.NewClient(tls.Client(conn, tc)), nil
	case "smtp":
		c, err := smtp.NewClientStartTLS(conn, tc)
		if err != nil {
			conn.Close()
		}
		return c, err
	default:
		return smtp.NewClient(conn), nil
	}
}

// CanWrite implements provider.Provider: the target must be an address.
func (p *Provider) CanWrite(ctx context.Context, target, parent string) (provider.Writable, error) {
	if _, err := mail.ParseAddress(target); err != nil {
		return provider.Writable{Reason: fmt.Sprintf("target %q is not an address", target)}, nil
	}
	return provider.Writable{OK: true}, nil
}
