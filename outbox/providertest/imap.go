package providertest

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sync"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
)

// SentMailbox is a sent mailbox served over IMAP on 127.0.0.1: go-imap's own
// server (imapserver, which follows RFC 9051 and RFC 3501) over its
// in-memory backend (imapmemserver), with one user and one mailbox, Sent.
// It stands for the mailbox a submission server files every mail it takes
// into (as Gmail and most hosted providers do): Add puts a mail there the
// moment an SMTP fake takes it, and Mirror brings in, at the start of each
// IMAP session, what a real SMTP server (mailpit, which has no IMAP) took.
//
// A server rather than a hand-written fake: the provider's client then
// meets real SEARCH, UID and FETCH BODY[] semantics (the "n:*" range that
// always matches the highest UID, literal strings, UIDVALIDITY), and the
// server comes from the module the client already needs.
type SentMailbox struct {
	Addr     string
	Username string
	Password string

	user *imapmemserver.User

	mu     sync.Mutex
	mirror func() (map[string][]byte, error)
	seen   map[string]bool
	adds   int
}

// NewSentMailbox starts the server; it stops when the test ends.
func NewSentMailbox(tb interface {
	Helper()
	Fatal(...any)
	Cleanup(func())
}) *SentMailbox {
	tb.Helper()
	s := &SentMailbox{Username: "tidemark", Password: "imap-secret", seen: map[string]bool{}}
	mem := imapmemserver.New()
	s.user = imapmemserver.NewUser(s.Username, s.Password)
	if err := s.user.Create("Sent", nil); err != nil {
		tb.Fatal(err)
	}
	mem.AddUser(s.user)
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			if err := s.sync(); err != nil {
				return nil, nil, err
			}
			return mem.NewSession(), nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIMAP4rev2: {}},
		InsecureAuth: true,
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s.Addr = l.Addr().String()
	go func() { _ = srv.Serve(l) }()
	tb.Cleanup(func() { _ = srv.Close() })
	return s
}

// Settings are the email lane settings that read this mailbox back.
func (s *SentMailbox) Settings() map[string]string {
	return map[string]string{"imap_url": "imap+insecure://" + s.Addr, "imap_username": s.Username,
		"imap_password": s.Password, "sent_mailbox": "Sent"}
}

// Add files one mail, as sent, into the mailbox.
func (s *SentMailbox) Add(raw []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(raw)
}

func (s *SentMailbox) addLocked(raw []byte) error {
	if _, err := s.user.Append("Sent", literal{bytes.NewReader(raw)}, &imap.AppendOptions{}); err != nil {
		return fmt.Errorf("providertest: file a mail into Sent: %w", err)
	}
	s.adds++
	return nil
}

// Len is how many mails the mailbox holds.
func (s *SentMailbox) Len() int { s.mu.Lock(); defer s.mu.Unlock(); return s.adds }

// Mirror makes every session start by filing the mails f returns (by an
// id of the other server's) that are not filed yet.
func (s *SentMailbox) Mirror(f func() (map[string][]byte, error)) {
	s.mu.Lock()
	s.mirror = f
	s.mu.Unlock()
}

func (s *SentMailbox) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mirror == nil {
		return nil
	}
	mails, err := s.mirror()
	if err != nil {
		return err
	}
	// In the other server's order of ids, so UIDs follow it.
	for _, id := range slices.Sorted(maps.Keys(mails)) {
		if s.seen[id] {
			continue
		}
		if err := s.addLocked(mails[id]); err != nil {
			return err
		}
		s.seen[id] = true
	}
	return nil
}

// literal is a mail as IMAP APPEND reads it: its bytes and their number.
type literal struct{ *bytes.Reader }

var _ imap.LiteralReader = literal{}
var _ io.Reader = literal{}
