package email

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message/mail"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox/provider"
)

// DefaultSentMailbox is the mailbox the sent mail is read back from when
// the lane names none.
const DefaultSentMailbox = "Sent"

// imapPageSize bounds the mails one listing page fetches.
const imapPageSize = 50

// ownMessageID matches the Message-IDs this provider makes: the intent's
// key ("tm-" and hex) at a domain.
var ownMessageID = regexp.MustCompile(`^<tm-[0-9a-f]+@([^>\s]+)>$`)

// imapConfig is where the sent mailbox is read: parsed from IMAPURL.
type imapConfig struct {
	scheme, addr string
}

func parseIMAPURL(raw string) (*imapConfig, error) {
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, tidemark.Invalidf("setting imap_url", raw, "want imaps://host:993, imap://host:143 (STARTTLS required) or imap+insecure://host:port")
	}
	addr := u.Host
	switch u.Scheme {
	case "imaps":
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "993")
		}
	case "imap":
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "143")
		}
	case "imap+insecure":
		if u.Port() == "" {
			return nil, tidemark.Invalidf("setting imap_url", raw, "imap+insecure needs a port")
		}
	default:
		return nil, tidemark.Invalidf("setting imap_url", raw, "want imaps://, imap:// or imap+insecure://")
	}
	return &imapConfig{scheme: u.Scheme, addr: addr}, nil
}

// Fingerprint implements provider.Fingerprinter: a mail's text comes back
// with CRLF line breaks and a line break after its last line, so both
// sides are joined on the SHA-256 of the text with LF line breaks and no
// trailing line breaks.
func (p *Provider) Fingerprint(body []byte) string {
	return provider.BodySHA256([]byte(normalizeText(string(body))))
}

func normalizeText(s string) string {
	return strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
}

// sentSession opens a read-only session on the sent mailbox. The caller
// closes the client.
func (p *Provider) sentSession(ctx context.Context) (*imapclient.Client, *imap.SelectData, error) {
	d := net.Dialer{Timeout: p.c.Timeout}
	dctx, cancel := context.WithTimeout(ctx, p.c.Timeout)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", p.imap.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("imap %s: %w: %w", p.imap.addr, tidemark.ErrUnavailable, err)
	}
	_ = conn.SetDeadline(time.Now().Add(p.c.Timeout))
	tc := p.c.TLSConfig
	if tc == nil {
		host, _, _ := net.SplitHostPort(p.imap.addr)
		tc = &tls.Config{ServerName: host}
	}
	var c *imapclient.Client
	switch p.imap.scheme {
	case "imaps":
		c = imapclient.New(tls.Client(conn, tc), &imapclient.Options{TLSConfig: tc})
	case "imap":
		if c, err = imapclient.NewStartTLS(conn, &imapclient.Options{TLSConfig: tc}); err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("imap %s: STARTTLS: %w: %w", p.imap.addr, tidemark.ErrUnavailable, err)
		}
	default:
		c = imapclient.New(conn, nil)
	}
	if err := c.Login(p.c.IMAPUsername, p.c.IMAPPassword).Wait(); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("imap %s: login: %w", p.imap.addr, err)
	}
	sel, err := c.Select(p.c.SentMailbox, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("imap %s: examine %q: %w", p.imap.addr, p.c.SentMailbox, err)
	}
	return c, sel, nil
}

// liveMeta is the age of an answer read in a live IMAP session: IMAP has
// no cache between us and the mailbox, so what a SEARCH returns is the
// mailbox as it was when we asked. It is stated in the HTTP form the
// freshness rule reads: a Date no later than the request, Age 0.
func liveMeta(requestTime time.Time) provider.Meta {
	return provider.Meta{RequestTime: requestTime, Date: requestTime.UTC().Format(http.TimeFormat), Age: "0",
		CacheControl: "no-store (a live IMAP session)"}
}

// ListScope implements provider.Resumable: the listing's cursor is the
// mailbox's UIDVALIDITY and a UID, a keyset that mails filed or expunged
// since do not move (a renumbered mailbox refuses the cursor).
func (p *Provider) ListScope() string {
	if p.imap == nil {
		return ""
	}
	return provider.ScopeDigest("email", p.c.IMAPURL, p.c.IMAPUsername, p.c.IMAPPassword, p.c.SentMailbox)
}

// ListOwn implements provider.Provider: with a sent mailbox configured
// (imap_url), the mails in it whose Message-ID is one of ours
// (tm-…@the from address's domain), in UID order, one page of
// imapPageSize a call. The cursor is the last UID read and the mailbox's
// UIDVALIDITY: a mailbox whose UIDs were renumbered is read again from
// its start. Each own write's body fingerprint is that of its text part.
func (p *Provider) ListOwn(ctx context.Context, lq provider.ListQuery) (provider.Page, error) {
	cursor := lq.Cursor
	if p.imap == nil {
		return provider.Page{}, fmt.Errorf("email: no sent mailbox configured (imap_url): %w", provider.ErrUnsupported)
	}
	var after uint64
	var validity uint64
	if cursor != "" {
		v, a, ok := strings.Cut(cursor, ":")
		var err1, err2 error
		validity, err1 = strconv.ParseUint(v, 10, 32)
		after, err2 = strconv.ParseUint(a, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return provider.Page{}, fmt.Errorf("email: bad cursor %q", cursor)
		}
	}
	at := p.c.Clock.Now()
	c, sel, err := p.sentSession(ctx)
	if err != nil {
		return provider.Page{}, err
	}
	defer c.Close()
	if cursor != "" && uint64(sel.UIDValidity) != validity {
		return provider.Page{}, fmt.Errorf("email: the sent mailbox was renumbered (UIDVALIDITY %d, was %d) while it was being listed: %w",
			sel.UIDValidity, validity, tidemark.ErrUnavailable)
	}
	crit := &imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: "<tm-"}}}
	if after > 0 {
		crit.UID = []imap.UIDSet{{imap.UIDRange{Start: imap.UID(after + 1), Stop: 0}}}
	}
	if !lq.Since.IsZero() {
		// SINCE compares the internal date's day in the server's zone: a
		// day earlier is safe whatever the zone.
		crit.Since = lq.Since.UTC().AddDate(0, 0, -1)
	}
	found, err := c.UIDSearch(crit, nil).Wait()
	if err != nil {
		return provider.Page{}, fmt.Errorf("imap: search: %w", err)
	}
	uids := found.AllUIDs()
	slices.Sort(uids)
	// A UID range "n:*" always matches the highest UID, even below n.
	uids = slices.DeleteFunc(uids, func(u imap.UID) bool { return uint64(u) <= after })
	page := provider.Page{Meta: liveMeta(at)}
	if len(uids) == 0 {
		_ = c.Logout().Wait() // what was read stands; Close ends the session anyway
		return page, nil
	}
	more := len(uids) > imapPageSize
	if more {
		uids = uids[:imapPageSize]
	}
	section := &imap.FetchItemBodySection{Peek: true}
	msgs, err := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{UID: true, InternalDate: true, BodySection: []*imap.FetchItemBodySection{section}}).Collect()
	if err != nil {
		return provider.Page{}, fmt.Errorf("imap: fetch: %w", err)
	}
	slices.SortFunc(msgs, func(a, b *imapclient.FetchMessageBuffer) int { return int(a.UID) - int(b.UID) })
	domain := p.domain()
	for _, m := range msgs {
		w, ok, err := p.ownWrite(m.FindBodySection(section), domain)
		if err != nil {
			return provider.Page{}, fmt.Errorf("imap: message UID %d: %w", m.UID, err)
		}
		if !ok {
			continue
		}
		if w.CreatedAt.IsZero() {
			w.CreatedAt = m.InternalDate.UTC()
		}
		page.Writes = append(page.Writes, w)
	}
	if more {
		page.Next = fmt.Sprintf("%d:%d", sel.UIDValidity, uids[len(uids)-1])
	}
	_ = c.Logout().Wait()
	return page, nil
}

// ownWrite reads one mail of the sent mailbox: ours when its Message-ID
// is one we make at our domain.
func (p *Provider) ownWrite(raw []byte, domain string) (provider.OwnWrite, bool, error) {
	r, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		return provider.OwnWrite{}, false, err
	}
	defer r.Close()
	id := strings.TrimSpace(r.Header.Get("Message-Id"))
	if m := ownMessageID.FindStringSubmatch(id); m == nil || !strings.EqualFold(m[1], domain) {
		return provider.OwnWrite{}, false, nil
	}
	to, err := r.Header.AddressList("To")
	if err != nil || len(to) != 1 {
		return provider.OwnWrite{}, false, nil
	}
	text, err := textPart(r)
	if err != nil {
		return provider.OwnWrite{}, false, err
	}
	w := provider.OwnWrite{RemoteID: id, Target: to[0].Address, HasParent: true,
		BodySHA256: provider.BodySHA256([]byte(normalizeText(text)))}
	if d, err := r.Header.Date(); err == nil {
		w.CreatedAt = d.UTC()
	}
	return w, true, nil
}

// textPart returns the first text/plain part of a mail, decoded.
func textPart(r *mail.Reader) (string, error) {
	for {
		part, err := r.NextPart()
		if err == io.EOF {
			return "", fmt.Errorf("no text/plain part")
		}
		if err != nil {
			return "", err
		}
		h, ok := part.Header.(*mail.InlineHeader)
		if !ok {
			continue
		}
		if ct, _, _ := h.ContentType(); ct != "text/plain" {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(part.Body, MaxBodyBytes+1))
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
}

// domain is the from address's domain: the right side of our Message-IDs.
func (p *Provider) domain() string {
	if i := strings.LastIndexByte(p.from.Address, '@'); i >= 0 {
		return p.from.Address[i+1:]
	}
	return "tidemark.invalid"
}
