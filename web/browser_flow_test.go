package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/content"
	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/pipeline/site"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

// releasesFeed is the upstream the flow tracks: an Atom feed of two
// releases.
const releasesFeed = `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
<title>Widget releases</title><id>urn:widget:releases</id><updated>2026-11-30T12:00:00Z</updated>
<entry><title>Widget 2.0: sync in the background</title><id>urn:widget:2.0</id><link href="https://widget.example.org/releases/2.0"/>
<updated>2026-11-30T12:00:00Z</updated><content type="text">Widget 2.0 syncs in the background and resumes an interrupted upload where it stopped.</content></entry>
<entry><title>Widget 1.9: fewer retries</title><id>urn:widget:1.9</id><link href="https://widget.example.org/releases/1.9"/>
<updated>2026-11-01T12:00:00Z</updated><content type="text">Widget 1.9 backs off between retries instead of hammering the server.</content></entry>
</feed>`

// flow is a real pipeline on a temporary directory, served by the wiring
// `tidemark serve` uses (site.New), with an upstream feed and a webhook
// receiver on loopback.
type flow struct {
	p        *pipeline.Pipeline
	base     string
	token    string
	feedURL  string
	hookURL  string
	hookMu   sync.Mutex
	hookHits int
	// release lets the console's migrations run: until it is closed, a
	// started migration stays running with nothing converted, so the flow
	// can abort a migration in progress.
	release chan struct{}
}

// heldDrives are the pipeline's document operations, with a migration's
// drive held until release is closed.
type heldDrives struct {
	web.DocOps
	release chan struct{}
}

func (h heldDrives) DriveMigration(ctx context.Context, id string, progress func(content.Run)) (content.Run, error) {
	<-h.release
	return h.DocOps.DriveMigration(ctx, id, progress)
}

func mustFlow(t *testing.T, b sqltest.Backend) *flow {
	t.Helper()
	ctx := context.Background()
	f := &flow{}
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/atom+xml")
		_, _ = io.WriteString(w, releasesFeed)
	}))
	t.Cleanup(feed.Close)
	f.feedURL = feed.URL + "/releases.atom"
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hookMu.Lock()
		f.hookHits++
		f.hookMu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	f.hookURL = hook.URL + "/hook"

	cfg := pipeline.Defaults()
	cfg.Home, cfg.Database = t.TempDir(), b.NewURL(t)
	// A long public base: the outbox's messages carry links a phone must
	// wrap (a channel's preview, an intent's body).
	cfg.WikiURL = "https://wiki.engineering.example.org/tidemark/public/changes-of-the-platform-infrastructure-team"
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	f.p = p
	if f.token, _, err = p.DB().Auth().CreateToken(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	// A collection of the operator's own, whose score field holds a value
	// no number rule accepts: the migration to number stops on it.
	if _, err := p.CreateCollection(ctx, "ops", "notes", []string{"score:text"}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{`"1"`, `"2"`, `"many"`} {
		if _, _, err := p.PutDocument(ctx, "ops", "notes", content.Put{Set: content.Fields{"score": []byte(v)}}); err != nil {
			t.Fatal(err)
		}
	}
	// The feed and the hook are on loopback: the console may allow that.
	s, err := site.New(ctx, p, site.Options{Admission: kinds.Admission{AllowPrivate: true}})
	if err != nil {
		t.Fatal(err)
	}
	f.release = make(chan struct{})
	s.Docs = heldDrives{DocOps: s.Docs, release: f.release}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	f.base = srv.URL
	return f
}

// An operator's whole day in a browser, on the server `tidemark serve`
// runs: sign in, test and add a feed, run it, read the run, the event and
// the published change, route the source's pages to a webhook lane and
// publish from the console and retire and revive the intent publishing
// drafted, start a field migration that stops on a bad value and abort
// it, and reject a published summary and sweep its page away. Every page is
// photographed at a desktop's and a phone's width, and fits both.
func TestBrowserFlow(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		name := "flow"
		if b.Name != "sqlite" {
			name += "-" + b.Name
		}
		ctx := mustBrowser(t) // skips without a browser, before building anything
		testBrowserFlow(t, ctx, mustFlow(t, b), name)
	})
}

func testBrowserFlow(t *testing.T, ctx context.Context, f *flow, name string) {
	dir := artifactsDir(t)
	base := f.base
	t.Logf("screenshots in %s", dir)
	shoot := func(page string) { t.Helper(); mustLookRight(t, ctx, dir, name+"-"+page) }
	// notice checks a write's notice and photographs it at the width the
	// page was last shown at (the phone's).
	notice := func(page, want string) {
		t.Helper()
		mustNotice(t, ctx, want)
		mustPhotograph(t, ctx, dir, name+"-"+page+"-notice")
	}

	// Sign in: the console sends a stranger to the sign-in page and back.
	mustOpen(t, ctx, base+"/status")
	if loc := mustGet(t, ctx, chromedp.Location()); !strings.Contains(loc, "/signin?next=") {
		t.Fatalf("/status without a session went to %s, want the sign-in page", loc)
	}
	shoot("signin")
	mustSignIn(t, ctx, f.token, `form[action="/status/sources"]`)
	mustSee(t, ctx, "the status page", "no sources")
	shoot("status")

	// Add a source: test the location first, then add it as tested.
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`input[name="location"]`), f.feedURL),
		chromedp.Click(chromedp.CSS(`input[name="allow_private"]`)),
		chromedp.Click(chromedp.CSS(`button[formaction="/status/sources/test"]`)), chromedp.WaitVisible(chromedp.CSS(`#preview`)))
	mustSee(t, ctx, "the preview", "Widget 2.0: sync in the background", "Widget 1.9: fewer retries", "nothing was stored")
	shoot("preview")
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`input[name="name"]`), "releases"),
		chromedp.Click(chromedp.CSS(`form[action="/status/sources"] button:not([formaction])`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/status/sources/releases/run"]`)))
	notice("source-added", `added feed source "releases"`)
	shoot("source-added")

	// Run it now, from its page.
	mustOpen(t, ctx, base+"/status/sources/releases")
	mustDo(t, ctx, submit(`form[action="/status/sources/releases/run"] button`))
	notice("source-ran", "ran releases")
	mustSee(t, ctx, "the source after its run", "items", "Widget 2.0: sync in the background")
	shoot("source-ran")

	// Open the change: the run, then the event it froze.
	mustDo(t, ctx, chromedp.Click(chromedp.CSS(`a[href^="/status/runs/"]`)), chromedp.WaitVisible(chromedp.CSS(`#run-events`)))
	mustSee(t, ctx, "the run page", "items", "2 new", "Widget 1.9: fewer retries")
	shoot("run")
	mustDo(t, ctx, chromedp.Click(chromedp.CSS(`#run-events ~ div a[href^="/status/events/"]`)), chromedp.WaitVisible(chromedp.CSS(`#revisions`)))
	mustSee(t, ctx, "the event page", "Widget 2.0: sync in the background", "revision 1", "releases", "not published yet")
	shoot("event")
	eventURL := mustGet(t, ctx, chromedp.Location())

	// Route the source's pages to a webhook lane, from the outbox console.
	mustOpen(t, ctx, base+"/status/outbox")
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`form[action="/status/outbox/lanes"] input[name="name"]`), "team-chat"),
		chromedp.SetValue(chromedp.CSS(`select[name="provider"]`), "webhook"),
		chromedp.SetValue(chromedp.CSS(`textarea[name="settings"]`), "url="+f.hookURL+"\nsecret=flow-secret"),
		chromedp.Click(chromedp.CSS(`form[action="/status/outbox/lanes"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/status/lanes/team-chat/reconcile"]`)))
	notice("lane-added", "team-chat")
	shoot("lane-added")
	mustOpen(t, ctx, base+"/status/outbox")
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`form[action="/status/outbox/channels"] input[name="source"]`), "releases"),
		chromedp.SetValue(chromedp.CSS(`form[action="/status/outbox/channels"] input[name="target"]`), "#releases"),
		chromedp.Click(chromedp.CSS(`form[action="/status/outbox/channels"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/remove"][action^="/status/outbox/channels/"]`)))
	notice("channel-added", "pages of releases will be delivered to #releases on lane team-chat")
	shoot("outbox")

	// Publish from the console, as the daemon's loop would: each page
	// drafts an intent.
	mustOpen(t, ctx, base+"/console/publish")
	mustSee(t, ctx, "the publishing page before publishing", "0 of 0 pages published", "no summaries yet")
	shoot("publish-empty")
	mustDo(t, ctx, submit(`form[action="/console/publish"] button`))
	notice("published", "2 summaries accepted, 2 pages published")
	mustNotice(t, ctx, "Nothing more is pending")
	mustSee(t, ctx, "the publishing page after publishing", "2 of 2 pages published", "0 behind", "2 current, 0 rejected, 0 superseded",
		"Widget 2.0 syncs in the background")
	shoot("published")

	// The channel's page previews what it sends for the latest change.
	mustOpen(t, ctx, base+"/status/outbox")
	mustDo(t, ctx, chromedp.Click(chromedp.CSS(`a[href^="/status/outbox/channels/"]`)), chromedp.WaitVisible(chromedp.CSS(`pre.preview`)))
	mustSee(t, ctx, "the channel's preview", "Widget 2.0: sync in the background", "its source's latest published change")
	shoot("channel")

	// The wiki page of the change, from its event's page; the wiki's
	// index lists it too.
	mustOpen(t, ctx, base+"/")
	mustSee(t, ctx, "the wiki's index", "Widget 2.0: sync in the background", "Widget 1.9: fewer retries")
	shoot("wiki-index")
	mustOpen(t, ctx, eventURL)
	mustDo(t, ctx, chromedp.Click(chromedp.CSS(`a[href^="/changes/"]`)), chromedp.WaitVisible(chromedp.CSS(`a[href="https://widget.example.org/releases/2.0"]`)))
	mustSee(t, ctx, "the change's wiki page", "Widget 2.0: sync in the background", "resumes an interrupted upload")
	shoot("wiki-change")
	wikiPage := mustGet(t, ctx, chromedp.Location())

	// An editor retitles the change and adds a note from the documents
	// console; saving republishes the wiki page.
	mustOpen(t, ctx, base+"/console/docs")
	mustSee(t, ctx, "the documents page", "pages", "notes")
	shoot("docs")
	mustOpen(t, ctx, base+"/console/docs/pages")
	shoot("docs-pages")
	mustOpen(t, ctx, eventURL)
	mustDo(t, ctx, chromedp.Click(chromedp.CSS(`a[href^="/console/docs/pages/"]`)), chromedp.WaitVisible(chromedp.CSS(`#title`)))
	mustSee(t, ctx, "the page document", "saving creates it")
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`#title`), "Widget 2.0 ships background sync"),
		chromedp.SetValue(chromedp.CSS(`#notes`), "Editors: the upload resumes where it stopped."),
		submit(`form[action^="/console/docs/pages/"] button[type="submit"]`))
	notice("doc-saved", "saved version 1")
	mustSee(t, ctx, "the saved page document", "version 1", "put", "ops")
	shoot("doc")
	mustOpen(t, ctx, wikiPage)
	mustSee(t, ctx, "the retitled wiki page", "Widget 2.0 ships background sync", "Editors: the upload resumes where it stopped.")
	shoot("wiki-change-edited")

	// Retire the drafted intent, then revive it.
	mustOpen(t, ctx, base+"/status/lanes/team-chat")
	mustSee(t, ctx, "the lane page", "#releases", "pending")
	shoot("lane")
	mustDo(t, ctx, chromedp.Click(chromedp.CSS(`a[href^="/status/outbox/intents/"]`)), chromedp.WaitVisible(chromedp.CSS(`label > input[name="reason"]`))) // the lane has no label
	mustSee(t, ctx, "the intent page", "announces", "the wiki page", "#releases", "pending")
	shoot("intent")
	// Each wait names the button only the page after the write has.
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`input[name="reason"]`), "announced by hand"),
		chromedp.Click(chromedp.CSS(`button[formaction$="/retire"]`)), chromedp.WaitVisible(chromedp.CSS(`button[formaction$="/revive"]`)))
	notice("intent-retired", "is now retired")
	mustSee(t, ctx, "the retired intent", "retired", "announced by hand")
	shoot("intent-retired")
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`input[name="reason"]`), "send it after all"),
		chromedp.Click(chromedp.CSS(`button[formaction$="/revive"]`)), chromedp.WaitVisible(chromedp.CSS(`button[formaction$="/retire"]`)))
	notice("intent-revived", "is now pending")
	mustSee(t, ctx, "the revived intent", "announced by hand", "send it after all")

	// Start a field migration and abort it while it runs: it ends aborted
	// once its drive goes on, having converted nothing.
	mustOpen(t, ctx, base+"/console/migrations")
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`select[name="field"]`), "notes.score"),
		chromedp.SetValue(chromedp.CSS(`select[name="to"]`), "number"),
		chromedp.SetValue(chromedp.CSS(`input[name="batch"]`), "1"),
		chromedp.Click(chromedp.CSS(`form[action="/console/migrations"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/abort"]`)))
	notice("migration-running", "started notes.score text→number over 3 documents")
	mustSee(t, ctx, "the running migration", "running", "0 of 3")
	shoot("migration-running")
	mustDo(t, ctx, submit(`form[action$="/abort"] button`))
	notice("migration-aborting-running", "aborting: migration")
	mustSee(t, ctx, "the aborting migration", "aborting")
	close(f.release)
	// The page refreshes itself while the run is active.
	mustDo(t, ctx, chromedp.WaitVisible(chromedp.CSS(`.m-aborted`)))
	mustSee(t, ctx, "the migration aborted while it ran", "aborted")
	shoot("migration-aborted-running")

	// Start it again; it stops on the value no rule accepts, and the
	// operator aborts it, restoring what it converted.
	mustOpen(t, ctx, base+"/console/migrations")
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`select[name="field"]`), "notes.score"),
		chromedp.SetValue(chromedp.CSS(`select[name="to"]`), "number"),
		chromedp.SetValue(chromedp.CSS(`input[name="batch"]`), "1"),
		chromedp.Click(chromedp.CSS(`form[action="/console/migrations"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/abort"]`)))
	notice("migration-started", "started notes.score text→number over 3 documents")
	// The page refreshes itself while the run is active.
	mustDo(t, ctx, chromedp.WaitVisible(chromedp.CSS(`.m-failed`)))
	mustSee(t, ctx, "the failed migration", "failed at", "many", "Abort")
	shoot("migration-failed")
	// The photographs reloaded the page, so the notice of the start is
	// gone: the one waited for is the abort's.
	mustDo(t, ctx, submit(`form[action$="/abort"] button`))
	notice("migration-aborting", "aborting: migration")
	mustDo(t, ctx, chromedp.WaitVisible(chromedp.CSS(`.m-aborted`)))
	mustSee(t, ctx, "the aborted migration", "2 of 2 restored", "migration.abort")
	shoot("migration-aborted")
	mustOpen(t, ctx, base+"/console/migrations")
	mustSee(t, ctx, "the migrations page", "notes.score", "aborted")
	shoot("migrations")

	// The books say a sweep found both pages missing from the store (it
	// could not republish them): the publishing page says so until a
	// sweep finds them there.
	if n := mustRecordMissing(t, f.p.DB().Publish()); n != 2 {
		t.Fatalf("%d pages recorded missing, want 2", n)
	}

	// Reject the change's summary: the page says the next publishing
	// round withdraws it, and Sweep now does.
	eventID := eventURL[strings.LastIndex(eventURL, "/")+1:]
	mustOpen(t, ctx, base+"/console/publish?event="+eventID)
	mustSee(t, ctx, "the event's summaries", "current", "a rejected summary is never published; the next publishing round withdraws its page.")
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`form.reject input[name="reason"]`), "says too little"),
		submit(`form.reject button`))
	notice("summary-rejected", "the next publishing round withdraws its page")
	mustSee(t, ctx, "the rejected summary", "rejected: says too little", "2 of 2 pages published", "1 to be withdrawn by the next publishing round",
		"2 missing from the object store, listed nowhere until a sweep republishes them", "1 current, 1 rejected, 0 superseded")
	shoot("summary-rejected")
	mustDo(t, ctx, submit(`form[action="/console/publish/sweep"] button`))
	notice("swept", "1 withdrawn")
	if body := mustSee(t, ctx, "the publishing page after the sweep", "1 of 2 pages published", "0 behind"); strings.Contains(body, "missing from the object store") {
		t.Errorf("the sweep found the pages in the store, and the publishing page still says some are missing")
	}
	shoot("swept")
	if body := mustOpen(t, ctx, wikiPage); strings.Contains(body, "resumes an interrupted upload") || !strings.Contains(body, "not found") {
		t.Errorf("the withdrawn wiki page %s still shows:\n%s", wikiPage, body)
	}
	mustOpen(t, ctx, base+"/")
	if body := mustSee(t, ctx, "the wiki's index after the sweep", "Widget 1.9: fewer retries"); strings.Contains(body, "Widget 2.0") {
		t.Errorf("the wiki's index still lists the withdrawn page:\n%s", body)
	}

	// The rejection was a mistake: Unreject it (a reason required, as
	// publish unreject), and Publish now brings the page back.
	mustOpen(t, ctx, base+"/console/publish?event="+eventID)
	mustSee(t, ctx, "the event's rejected summary", "rejected: says too little", "Unreject a rejected one with a reason")
	shoot("summary-unreject")
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`form.unreject input[name="reason"]`), "it was right"),
		submit(`form.unreject button`))
	notice("summary-unrejected", "it is current again, and the next publishing round publishes its page")
	if body := mustSee(t, ctx, "the unrejected summary", "2 current, 0 rejected, 0 superseded"); strings.Contains(body, "Unreject") && strings.Contains(body, "rejected: says too little") {
		t.Errorf("the summary still reads as rejected after its Unreject:\n%s", body)
	}
	mustDo(t, ctx, submit(`form[action="/console/publish"] button`))
	notice("republished", "1 page published")
	if body := mustOpen(t, ctx, wikiPage); !strings.Contains(body, "resumes an interrupted upload") {
		t.Errorf("the wiki page %s is not back after the Unreject and a round:\n%s", wikiPage, body)
	}

	f.hookMu.Lock()
	defer f.hookMu.Unlock()
	if f.hookHits != 0 {
		t.Errorf("the webhook was called %d times; nothing in the flow delivers", f.hookHits)
	}

}
