package web_test

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/summarize/extractive"
	"github.com/tidemark/tidemark/web"
)

// wikiHandler serves the wiki's objects as `tidemark serve` does.
func wikiHandler(objs objstore.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if key == "" || strings.HasSuffix(r.URL.Path, "/") {
			key = strings.TrimPrefix(key+"/index.html", "/")
		}
		o, err := objs.Get(r.Context(), key)
		if errors.Is(err, objstore.ErrNotFound) {
			http.NotFound(w, r)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if ct := mime.TypeByExtension(path.Ext(key)); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		_, _ = w.Write(o.Body)
	})
}

// mustConsoleFixture fills a database with what the pages show: a source
// with changes published to the wiki, a source whose window went terminal,
// a paused one, a lane with intents in several states, and a migration
// that failed, and serves it all.
func mustConsoleFixture(t *testing.T) (srvURL, token string) {
	t.Helper()
	ctx := context.Background()
	env := sqltest.NewEnv(31)
	db := sqltest.MustOpen(t, sqltest.Backends()[0], env)
	st := db.Ingest()
	for _, ns := range []ingest.NewSource{
		{Name: "tidemark-repo", Kind: "git", Location: "/srv/git/tidemark.git", Interval: 15 * time.Minute, RetryBudget: 5},
		{Name: "status-feed", Kind: "feed", Location: "https://status.example.org/history.atom", Interval: time.Hour, RetryBudget: 1},
		{Name: "paused-page", Kind: "page", Location: "https://example.org/pricing", Interval: time.Hour, RetryBudget: 3},
	} {
		if _, err := st.AddSource(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	var items []tidemark.Item
	for i, title := range []string{"Fix the claim's lease renewal when the heartbeat races settlement",
		"Add a convergence sweeper for pages whose repair failed", "Document the outbox's pacing gate"} {
		items = append(items, tidemark.Item{Key: fmt.Sprint("c", i), Title: title, URL: "https://example.org/commit/" + fmt.Sprint(i),
			OccurredAt: env.Clock.Now().Add(time.Duration(i) * time.Minute),
			Evidence:   []byte(title + "\n\nA longer message body explaining the change in a sentence or two, as commit messages do.")})
	}
	c, err := st.Claim(ctx, "tidemark-repo", "worker-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Settle(ctx, c, ingest.Settlement{Items: items, Cursor: "c2", NextDueAt: env.Clock.Now().Add(15 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	c, err = st.Claim(ctx, "status-feed", "worker-2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Fail(ctx, c, ingest.Failure{Outcome: tidemark.OutcomeUnreachable, Terminal: true, NextDueAt: env.Clock.Now(),
		Reason: "dial tcp 203.0.113.7:443: connect: connection refused (after 5 attempts over 26h)"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetState(ctx, "paused-page", tidemark.SourcePaused, "ops"); err != nil {
		t.Fatal(err)
	}

	objs := mem.New()
	svc := &publish.Service{Store: db.Publish(), Objects: objs}
	if _, err := svc.Summarize(ctx, extractive.Summarizer{}, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.PublishPending(ctx, 100); err != nil {
		t.Fatal(err)
	}

	ob := db.Outbox()
	if _, err := ob.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "team-chat", Provider: "webhook", Settings: map[string]string{"url": "https://hooks.example.org/T000/B000"}, MinGap: tidemark.Duration(2 * time.Second)}}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := ob.Draft(ctx, outbox.Draft{Lane: "team-chat", Target: "#changes",
			Body: fmt.Sprintf("New change %d in tidemark-repo: <b>see the wiki</b> https://wiki.example.org/changes/%d.html", i, i)}); err != nil {
			t.Fatal(err)
		}
	}

	cs := db.Content()
	if _, err := cs.CreateCollection(ctx, "notes", []content.Field{{Name: "score", Type: content.Text}}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{`"1"`, `"2"`, `"many"`} {
		env.Clock.Advance(time.Millisecond)
		if _, err := cs.Put(ctx, "notes", content.Put{Set: content.Fields{"score": []byte(v)}}); err != nil {
			t.Fatal(err)
		}
	}
	m := &content.Migrator{Store: cs, Holder: "worker-1"}
	run, err := m.Start(ctx, "notes", "score", content.Number, 2)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = m.Drive(ctx, run.ID) // fails on "many", as the page should show

	token, _, err = db.Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	s := &web.Server{Ingest: st, Outbox: ob, Migrations: cs, Publish: db.Publish(), Auth: db.Auth(),
		Search: db.Publish(), Wiki: wikiHandler(objs)}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL, token
}

// An operator signs in with a token and reads every page; each fits a
// desktop and a phone.
func TestBrowserConsole(t *testing.T) {
	ctx := mustBrowser(t)
	dir := artifactsDir(t)
	base, token := mustConsoleFixture(t)
	t.Logf("screenshots in %s", dir)

	// The public wiki needs no sign-in.
	if text := mustOpen(t, ctx, base+"/"); !strings.Contains(text, "tidemark-repo") {
		t.Fatalf("the wiki's index does not list the source:\n%s", text)
	}
	mustLookRight(t, ctx, dir, "wiki-index")
	change := mustGet(t, ctx, chromedp.AttributeValue(chromedp.CSS(`a[href*="changes/"]`), "href"))
	if text := mustOpen(t, ctx, base+"/"+strings.TrimPrefix(change.Value, "/")); !strings.Contains(text, "Document the outbox") {
		t.Fatalf("change page %s (the newest change):\n%s", change.Value, text)
	}
	mustLookRight(t, ctx, dir, "wiki-change")
	if text := mustOpen(t, ctx, base+"/search?q=sweeper"); !strings.Contains(text, "convergence") {
		t.Fatalf("search for sweeper:\n%s", text)
	}
	mustLookRight(t, ctx, dir, "search")

	// The console sends a stranger to sign in, and back after.
	mustOpen(t, ctx, base+"/status/lanes/team-chat")
	if loc := mustGet(t, ctx, chromedp.Location()); !strings.Contains(loc, "/signin?next=") {
		t.Fatalf("a lane page without a session went to %s, want the sign-in page", loc)
	}
	mustLookRight(t, ctx, dir, "signin")
	// Each wait names what only the next page has: the query would
	// otherwise find the node on the page being left.
	mustDo(t, ctx, chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), "tmk_not-a-token"), chromedp.Submit(chromedp.CSS(`input[name="token"]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.h-failing`)))
	if text := mustGet(t, ctx, chromedp.Text(chromedp.CSS("body"))); !strings.Contains(text, "not valid") {
		t.Fatalf("a wrong token is not refused with a reason:\n%s", text)
	}
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`input[name="token"]`), token), chromedp.Submit(chromedp.CSS(`input[name="token"]`)), chromedp.WaitVisible(chromedp.CSS(`table`)))
	loc, text := mustGet(t, ctx, chromedp.Location()), mustGet(t, ctx, chromedp.Text(chromedp.CSS("body")))
	if !strings.HasSuffix(loc, "/status/lanes/team-chat") || !strings.Contains(text, "<b>see the wiki</b>") {
		t.Fatalf("after sign-in: %s, want the lane page with its intents shown as text:\n%s", loc, text)
	}
	mustLookRight(t, ctx, dir, "lane")

	text = mustOpen(t, ctx, base+"/status")
	for _, want := range []string{"tidemark-repo", "status-feed", "terminal", "paused", "team-chat", "notes.score"} {
		if !strings.Contains(text, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	mustLookRight(t, ctx, dir, "status")
	if text := mustOpen(t, ctx, base+"/status/sources/status-feed"); !strings.Contains(text, "connection refused") {
		t.Errorf("source page lacks the failure:\n%s", text)
	}
	mustLookRight(t, ctx, dir, "source")

	// Signing out ends the session: the console asks for a token again.
	mustDo(t, ctx, chromedp.Click(chromedp.CSS(`form[action="/signout"] button`)), chromedp.WaitVisible(chromedp.CSS(`input[name="token"]`)))
	mustOpen(t, ctx, base+"/status")
	if loc := mustGet(t, ctx, chromedp.Location()); !strings.Contains(loc, "/signin") {
		t.Fatalf("after sign-out /status went to %s", loc)
	}
}
