package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// An operator manages sources in a browser: tests a location and adds it,
// pauses it, runs another now, reads a run and an event with its evidence,
// and removes a source with data after the confirmation asks for force.
// Every page fits a desktop and a phone.
func TestBrowserSources(t *testing.T) {
	ctx := mustBrowser(t)
	dir := artifactsDir(t)
	c, ops, db := mustConsole(t, sqltest.Backends()[0])
	base := c.base
	// A source whose answer was unusable: its health is a badge, as an
	// unreachable one's is.
	bg := context.Background()
	if _, err := db.Ingest().AddSource(bg, ingest.NewSource{Name: "garbled", Kind: "feed", Location: "https://example.org/garbled.xml", Interval: time.Minute, RetryBudget: 3}); err != nil {
		t.Fatal(err)
	}
	cl, err := db.Ingest().Claim(bg, "garbled", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest().Fail(bg, cl, ingest.Failure{Outcome: tidemark.OutcomeInvalid, Reason: "unusable feed: XML syntax error on line 1", NextDueAt: cl.StartedAt}); err != nil {
		t.Fatal(err)
	}

	mustOpen(t, ctx, base+"/status")
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`input[name="token"]`), c.token), chromedp.Submit(chromedp.CSS(`input[name="token"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/status/sources"]`)))
	mustLookRight(t, ctx, dir, "sources-status")

	// A refused add says why in the error notice's own style.
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`input[name="location"]`), "https://example.org/x.xml"),
		chromedp.SetValue(chromedp.CSS(`input[name="interval"]`), "soon"),
		chromedp.Click(chromedp.CSS(`form[action="/status/sources"] button:not([formaction])`)), chromedp.WaitVisible(chromedp.CSS(`p.problem`)))
	mustLookRight(t, ctx, dir, "sources-refused")
	mustOpen(t, ctx, base+"/status")

	// Test first: the preview shows what would become events.
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`input[name="location"]`), "https://example.org/new.xml"),
		chromedp.Click(chromedp.CSS(`button[formaction="/status/sources/test"]`)), chromedp.WaitVisible(chromedp.CSS(`#preview`)))
	if text := mustGet(t, ctx, chromedp.Text(chromedp.CSS("body"))); !strings.Contains(text, "First <post>") || !strings.Contains(text, "nothing was stored") {
		t.Fatalf("preview:\n%s", text)
	}
	mustLookRight(t, ctx, dir, "sources-preview")
	mustDo(t, ctx, chromedp.SetValue(chromedp.CSS(`input[name="name"]`), "fresh"),
		chromedp.Click(chromedp.CSS(`form[action="/status/sources"] button:not([formaction])`)), chromedp.WaitVisible(chromedp.CSS(`form[action="/status/sources/fresh/pause"]`)))
	if text := mustGet(t, ctx, chromedp.Text(chromedp.CSS("body"))); !strings.Contains(text, `added feed source "fresh"`) {
		t.Fatalf("after adding:\n%s", text)
	}
	mustDo(t, ctx, chromedp.Click(chromedp.CSS(`form[action="/status/sources/fresh/pause"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/status/sources/fresh/resume"]`)))
	mustLookRight(t, ctx, dir, "sources-source")

	mustOpen(t, ctx, base+"/status/sources/blog")
	mustDo(t, ctx, submit(`form[action="/status/sources/blog/run"] button`))
	if text := mustGet(t, ctx, chromedp.Text(chromedp.CSS("p.notice"))); !strings.Contains(text, "ran blog") {
		t.Fatalf("after run now: %q", text)
	}
	if len(ops.ran) != 1 {
		t.Fatalf("run now ran %v", ops.ran)
	}
	mustOpen(t, ctx, base+"/status/runs?source=blog")
	mustLookRight(t, ctx, dir, "sources-runs")
	// Each wait names what only the next page has.
	mustDo(t, ctx, chromedp.Click(chromedp.CSS(`a[href^="/status/runs/"]`)), chromedp.WaitVisible(chromedp.CSS(`#run-events`)))
	mustLookRight(t, ctx, dir, "sources-run")
	mustDo(t, ctx, chromedp.Click(chromedp.CSS(`a[href^="/status/events/"]`)), chromedp.WaitVisible(chromedp.CSS(`#revisions`)))
	if text := mustGet(t, ctx, chromedp.Text(chromedp.CSS("body"))); !strings.Contains(text, "Revisions") {
		t.Fatalf("event page:\n%s", text)
	}
	mustLookRight(t, ctx, dir, "sources-event")

	mustOpen(t, ctx, base+"/status/sources/blog/remove")
	mustLookRight(t, ctx, dir, "sources-remove")
	// The wait names what only the page after has (the confirmation has
	// a notice of its own).
	mustDo(t, ctx, chromedp.Click(chromedp.CSS(`input[name="force"]`)), chromedp.Click(chromedp.CSS(`button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/status/sources"]`)))
	if text := mustGet(t, ctx, chromedp.Text(chromedp.CSS("body"))); !strings.Contains(text, "removed blog and 2 events") || !strings.Contains(text, "Removed sources") {
		t.Fatalf("after removal:\n%s", text)
	}
}
