package web_test

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
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

// The browser tests drive a real Chromium (chromedp) through the pages a
// person uses. They run where TIDEMARK_TEST_CHROMIUM names the browser
// (.ci/run installs Debian's chromium and sets it) and skip elsewhere, so
// `go test ./...` passes on a machine without one. Screenshots of every
// page at desktop and mobile widths go to TIDEMARK_TEST_ARTIFACTS/browser
// (default: the test's temporary directory).
const (
	envChromium  = "TIDEMARK_TEST_CHROMIUM"
	envArtifacts = "TIDEMARK_TEST_ARTIFACTS"
)

// widths are the viewports every page is checked and photographed at.
var widths = []struct {
	name          string
	width, height int64
	mobile        bool
}{
	{"desktop", 1280, 800, false},
	{"mobile", 390, 844, true},
}

func mustBrowser(t *testing.T) context.Context {
	t.Helper()
	exe := os.Getenv(envChromium)
	if exe == "" {
		t.Skipf("no browser: set %s to a Chromium binary (.ci/run does) to run the browser tests", envChromium)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // CI runs as root in a container
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("lang", "en-US"),
	)
	// An upper bound so a wedged browser fails the test instead of
	// hanging it; nothing is timed.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	return ctx
}

// mustDo runs browser steps; mustGet runs one that answers a value.
func mustDo(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func mustGet[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// mustOpen navigates to url and returns the page's visible text.
func mustOpen(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	mustDo(t, ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
	return mustGet(t, ctx, chromedp.Text(chromedp.CSS("body")))
}

func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envArtifacts)
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, "browser")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

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
	if _, err := ob.AddLane(ctx, sqlstore.NewLane{Name: "team-chat", Provider: "webhook",
		Settings: map[string]string{"url": "https://hooks.example.org/T000/B000"}, MinGap: 2 * time.Second}); err != nil {
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

// mustLookRight photographs the current page at every width and fails
// when it does not fit: a page wider than a phone's screen scrolls
// sideways, which is broken on a phone.
func mustLookRight(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	for _, w := range widths {
		opts := []chromedp.EmulateViewportOption{}
		if w.mobile {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2))
		}
		mustDo(t, ctx, chromedp.EmulateViewport(w.width, w.height, opts...), chromedp.Reload(), chromedp.WaitReady(chromedp.CSS("body")))
		overflow := mustGet(t, ctx, chromedp.Evaluate[int64](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
		png := mustGet(t, ctx, chromedp.FullScreenshot(100))
		file := filepath.Join(dir, name+"-"+w.name+".png")
		if err := os.WriteFile(file, png, 0o644); err != nil {
			t.Fatal(err)
		}
		if overflow > 0 {
			t.Errorf("%s at %s (%dpx) is %dpx wider than the screen: it scrolls sideways (%s)", name, w.name, w.width, overflow, file)
		}
	}
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
