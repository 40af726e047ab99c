package providers_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	gomail "github.com/emersion/go-message/mail"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider/matrix"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/outbox/providertest"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// The real servers .ci/run starts (.ci/mailpit.sh, .ci/dendrite.sh). Each
// joins the send-once, crash and stale-writer suites as a setup of its own
// when its variables are set; without them those setups are not run.
const (
	envSMTPAddr     = "TIDEMARK_TEST_SMTP_ADDR"
	envMailpitAPI   = "TIDEMARK_TEST_MAILPIT_API"
	envMatrixURL    = "TIDEMARK_TEST_MATRIX_URL"
	envMatrixSecret = "TIDEMARK_TEST_MATRIX_SHARED_SECRET"
)

// realServers are the setups against real servers whose variables are set.
func realServers() map[string]setup {
	out := map[string]setup{}
	if os.Getenv(envSMTPAddr) != "" && os.Getenv(envMailpitAPI) != "" {
		// mailpit takes the mail over SMTP and shows what it took through
		// its API. It has no IMAP: the sent mailbox the lane reads back is
		// providertest's IMAP server mirroring, at each session, what
		// mailpit holds from this setup's sender, as a submission server
		// files what it takes into Sent.
		out["email@mailpit"] = setup{kind: "email", target: "reader@example.org", realClock: true,
			settings: func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper) {
				api := os.Getenv(envMailpitAPI)
				from := "tidemark-" + uniqueName(t) + "@example.org"
				proxy := newSMTPDropProxy(t, os.Getenv(envSMTPAddr))
				box := providertest.NewSentMailbox(t)
				box.Mirror(func() (map[string][]byte, error) { return mailpitMails(api, from) })
				s := box.Settings()
				s["smtp_url"], s["from"] = "smtp+insecure://"+proxy.addr, from
				return s, func() []string {
					mails, err := mailpitMails(api, from)
					if err != nil {
						t.Fatalf("mailpit: %v", err)
					}
					var bodies []string
					for _, raw := range mails {
						bodies = append(bodies, mustMailText(t, raw))
					}
					return bodies
				}, proxy
			}}
	}
	if os.Getenv(envMatrixURL) != "" && os.Getenv(envMatrixSecret) != "" {
		// Dendrite, through a proxy that loses the answers to writes it
		// passed on (providertest.Dropper).
		out["matrix@dendrite"] = setup{kind: "matrix", realClock: true,
			targetOf: func(s map[string]string) string { return s["rooms"] },
			settings: func(t *testing.T, env sqltest.Env) (map[string]string, func() []string, dropper) {
				hs := os.Getenv(envMatrixURL)
				token, user := providertest.MustRegisterMatrixUser(t, hs, os.Getenv(envMatrixSecret))
				room := providertest.MustCreateMatrixRoom(t, hs, token)
				u, err := url.Parse(hs)
				if err != nil {
					t.Fatal(err)
				}
				srv, d := providertest.NewDropServer(t, httputil.NewSingleHostReverseProxy(u))
				return map[string]string{"homeserver_url": srv.URL, "token": token, "user_id": user, "rooms": room},
					func() []string { return providertest.MatrixBodies(t, hs, token, room, user) }, d
			}}
	}
	return out
}

// uniqueName names what a test makes on a shared server (a sender, a
// user), so no two tests, runs or backends see each other's.
func uniqueName(t *testing.T) string { return strings.ToLower(rand.Text()) }

// mailpitMails returns the raw mails mailpit holds from sender, by id.
func mailpitMails(api, from string) (map[string][]byte, error) {
	q := url.Values{"query": {"from:" + from}, "limit": {"1000"}}
	resp, err := http.Get(api + "/api/v1/search?" + q.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var found struct {
		Total    int `json:"messages_count"`
		Messages []struct {
			ID string `json:"ID"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&found); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if found.Total != len(found.Messages) {
		return nil, fmt.Errorf("search: %d mails, %d listed", found.Total, len(found.Messages))
	}
	out := map[string][]byte{}
	for _, m := range found.Messages {
		r, err := http.Get(api + "/api/v1/message/" + url.PathEscape(m.ID) + "/raw")
		if err != nil {
			return nil, err
		}
		raw, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil || r.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("raw %s: status %d %v", m.ID, r.StatusCode, err)
		}
		out[m.ID] = raw
	}
	return out, nil
}

// mustMailText is a mail's text part, decoded, as the intent's body was.
func mustMailText(t *testing.T, raw []byte) string {
	t.Helper()
	text, err := mailText(raw)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// mailText is a mail's text part, decoded, with LF line breaks and no
// trailing ones: the intent's body as it was drafted.
func mailText(raw []byte) (string, error) {
	r, err := gomail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		return "", err
	}
	for {
		p, err := r.NextPart()
		if err != nil {
			return "", fmt.Errorf("no text part: %w", err)
		}
		if h, ok := p.Header.(*gomail.InlineHeader); ok {
			if ct, _, _ := h.ContentType(); ct == "text/plain" {
				b, err := io.ReadAll(p.Body)
				if err != nil {
					return "", err
				}
				return strings.TrimRight(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n"), nil
			}
		}
	}
}

// smtpDropProxy passes SMTP sessions to a real server and, on demand,
// loses the answer to every nth mail: the server took it (its final dot
// went through), but the proxy closes the client's connection instead of
// passing the answer on.
type smtpDropProxy struct {
	addr string

	mu      sync.Mutex
	every   int
	killAt  int
	kill    func()
	mails   int
	dropped int
	reused  int
}

func newSMTPDropProxy(t *testing.T, upstream string) *smtpDropProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &smtpDropProxy{addr: l.Addr().String()}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); p.serve(c, upstream) }()
		}
	}()
	t.Cleanup(func() { l.Close(); wg.Wait() })
	return p
}

func (p *smtpDropProxy) DropEvery(n int) { p.mu.Lock(); p.every = n; p.mu.Unlock() }
func (p *smtpDropProxy) KillAt(n int, kill func()) {
	p.mu.Lock()
	p.killAt, p.kill = n, kill
	p.mu.Unlock()
}
func (p *smtpDropProxy) Dropped() int { p.mu.Lock(); defer p.mu.Unlock(); return p.dropped }

// Reused is how many mails came on a connection that had carried one
// before (the provider opens one per mail, so none should).
func (p *smtpDropProxy) Reused() int { p.mu.Lock(); defer p.mu.Unlock(); return p.reused }

func (p *smtpDropProxy) serve(client net.Conn, upstream string) {
	defer client.Close()
	server, err := net.DialTimeout("tcp", upstream, 10*time.Second)
	if err != nil {
		return
	}
	defer server.Close()
	var mu sync.Mutex
	dropNext := false // the next reply is the answer to a mail to lose
	var kill func()   // called before it is lost
	done := make(chan struct{})
	go func() { // server → client
		defer close(done)
		r := bufio.NewReader(server)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				client.Close()
				return
			}
			mu.Lock()
			drop, k := dropNext, kill
			mu.Unlock()
			if drop {
				if k != nil {
					k()
				}
				client.Close()
				server.Close()
				return
			}
			if _, err := client.Write([]byte(line)); err != nil {
				return
			}
		}
	}()
	r := bufio.NewReader(client)
	inData, mailsHere := false, 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		switch {
		case !inData && strings.EqualFold(strings.TrimSpace(line), "DATA"):
			inData = true
		case inData && line == ".\r\n":
			inData = false
			p.mu.Lock()
			p.mails++
			if mailsHere++; mailsHere > 1 {
				p.reused++
			}
			drop := p.every > 0 && p.mails%p.every == 0
			var k func()
			if p.kill != nil && p.mails == p.killAt {
				k, drop = p.kill, true
			}
			if drop {
				p.dropped++
			}
			p.mu.Unlock()
			mu.Lock()
			dropNext, kill = drop, k
			mu.Unlock()
		}
		if _, err := server.Write([]byte(line)); err != nil {
			break
		}
	}
	server.Close()
	<-done
}

// TestDendriteBeyondTheKeyWindowLeavesAWriteInDoubtUnresolved: Dendrite's
// answers prove no freshness (no Age, no Cache-Control: no-store), so once
// a write in doubt is older than the 30 minutes a homeserver keeps its
// transaction id, nothing can decide it: it stays unresolved and is never
// sent again, and the room holds it once, as the providers table says.
func TestDendriteBeyondTheKeyWindowLeavesAWriteInDoubtUnresolved(t *testing.T) {
	k, ok := realServers()["matrix@dendrite"]
	if !ok {
		t.Skip("no Dendrite: source .ci/dendrite.sh")
	}
	ctx := context.Background()
	env := sqltest.NewEnv(9)
	db := sqltest.MustOpenURL(t, sqltest.NewSQLiteURL(t), env)
	st := db.Outbox()
	settings, received, d := k.settings(t, env)
	if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "lane", Provider: "matrix", Settings: settings}}); err != nil {
		t.Fatal(err)
	}
	in, err := st.Draft(ctx, outbox.Draft{Lane: "lane", Target: k.targetFor(settings), Body: "in doubt for an hour"})
	if err != nil {
		t.Fatal(err)
	}
	lane, err := st.Lane(ctx, "lane")
	if err != nil {
		t.Fatal(err)
	}
	prov, err := providers.New(lane, env.Clock)
	if err != nil {
		t.Fatal(err)
	}
	dl := &outbox.Deliverer{Store: st, Provider: prov, Lane: "lane", Holder: "w", Clock: env.Clock, LeaseTTL: 2 * time.Hour}
	d.DropEvery(1)
	if s, err := dl.Step(ctx); err != nil || s.Kind != outbox.StepSent || s.Outcome != outbox.OutcomeUnknown {
		t.Fatalf("the send: %+v %v", s, err)
	}
	d.DropEvery(0)
	env.Clock.Advance(matrix.TxnWindow + time.Minute)
	for range 5 {
		if _, err := dl.Step(ctx); err != nil {
			t.Fatal(err)
		}
		env.Clock.Advance(time.Minute)
	}
	got, err := st.ListIntents(ctx, outbox.IntentFilter{Lane: "lane"})
	if err != nil || len(got) != 1 || got[0].ID != in.ID || got[0].State != outbox.StateUnresolved {
		t.Fatalf("intents %+v %v: want the one unresolved", got, err)
	}
	if bodies := received(); len(bodies) != 1 {
		t.Fatalf("the room holds %q", bodies)
	}
}
