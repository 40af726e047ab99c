package web_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

// Upstream text of any length keeps the console readable: a 3,000
// character title without a space, a long title with spaces and a long
// upstream error wrap inside their cells and headings, the page never
// scrolls sideways, nothing sticks out of its box, and the narrow columns
// (dates, outcomes, revisions, IDs) stay on one line, at a desktop's width
// and as a phone's stacked cards.
func TestBrowserLongText(t *testing.T) {
	ctx := mustBrowser(t)
	dir := artifactsDir(t)
	bg := context.Background()
	env := sqltest.NewEnv(11)
	db := sqltest.MustOpen(t, sqltest.Backends()[0], env)
	st := db.Ingest()
	unbroken := strings.Repeat("x", 3000)
	words := strings.TrimSpace(strings.Repeat("refactor the pipeline's claim renewal ", 40))
	evs := sqltest.MustIngest(t, db, env, "long-titles", unbroken, words, "control \x1b[31mred\x1b[0m subject")
	byTitle := map[string]tidemark.Event{}
	for _, ev := range evs {
		byTitle[ev.Title] = ev
	}
	if _, err := st.AddSource(bg, ingest.NewSource{Name: "broken-feed", Kind: "feed", Location: "https://example.org/feed", Interval: time.Hour, RetryBudget: 1}); err != nil {
		t.Fatal(err)
	}
	// A source name as long as names may be, without a space.
	long := "engineering-blog-feed-for-the-platform-infrastructure-team-release-notes-and-incident-reports-2026"
	if _, err := st.AddSource(bg, ingest.NewSource{Name: long, Kind: "feed", Location: "https://example.org/long", Interval: time.Hour, RetryBudget: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := st.Claim(bg, "broken-feed", "worker-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Fail(bg, c, ingest.Failure{Outcome: tidemark.OutcomeInvalid, Terminal: true, NextDueAt: env.Clock.Now(),
		Reason: "parse feed: unexpected token near " + strings.Repeat("y", 2000)}); err != nil {
		t.Fatal(err)
	}
	token, _, err := db.Auth().CreateToken(bg, "ops")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&web.Server{Ingest: st, Auth: db.Auth()}).Handler())
	t.Cleanup(srv.Close)

	mustOpen(t, ctx, srv.URL+"/status")
	mustSignIn(t, ctx, token, "table")
	for name, path := range map[string]string{
		"long-status":       "/status",
		"long-source":       "/status/sources/long-titles",
		"long-source-error": "/status/sources/broken-feed",
		"long-events":       "/status/events",
		"long-event":        "/status/events/" + byTitle[unbroken].ID,
		"long-event-words":  "/status/events/" + byTitle[words].ID,
		"long-run":          "/status/runs/" + byTitle[words].RunID,
		"long-run-error":    "/status/runs/" + c.RunID,
		"long-runs":         "/status/runs",
	} {
		mustOpen(t, ctx, srv.URL+path)
		mustWrapLongText(t, ctx, dir, name, narrowCells)
	}
}

// The wiki's lists become stacked cards on a phone: a change's source is
// a line under its title, not a column one letter wide.
func TestBrowserWikiListOnAPhone(t *testing.T) {
	ctx := mustBrowser(t)
	dir := artifactsDir(t)
	base, _ := mustConsoleFixture(t)
	mustOpen(t, ctx, base+"/")
	mustWrapLongText(t, ctx, dir, "wiki-index-cards", "table.changes td.src, table.changes td.when")
}

// narrowCells are the console's cells that must stay on one line.
const narrowCells = `td[data-label=occurred], td[data-label=started], td[data-label=frozen], td[data-label="last run"],
td[data-label="next due"], td[data-label=outcome], td[data-label=revision], td[data-label=status], td[data-label=evidence],
td[data-label=sha256], td[data-label=run], td[data-label=kind], td[data-label=health]`

// mustWrapLongText photographs the current page at every width and fails
// when it scrolls sideways, when a heading or table is wider than its box,
// or when a cell that narrow selects wraps.
func mustWrapLongText(t *testing.T, ctx context.Context, dir, name, narrow string) {
	t.Helper()
	for _, w := range widths {
		opts := []chromedp.EmulateViewportOption{}
		if w.mobile {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2))
		}
		mustDo(t, ctx, chromedp.EmulateViewport(w.width, w.height, opts...), chromedp.Reload(), chromedp.WaitReady(chromedp.CSS("body")))
		problems := mustGet(t, ctx, chromedp.Evaluate[[]string](`(() => {
	const out = [];
	const page = document.documentElement;
	if (page.scrollWidth > page.clientWidth) out.push("the page is " + (page.scrollWidth - page.clientWidth) + "px wider than the screen");
	for (const e of document.querySelectorAll("h1, table, td, th")) {
		const box = e.tagName === "TABLE" ? e.parentElement : e;
		if (e.scrollWidth > box.clientWidth + 1) out.push(e.tagName.toLowerCase() + " " + e.scrollWidth + "px wide in a box of " + box.clientWidth + "px: " + e.textContent.slice(0, 40));
	}
	for (const td of document.querySelectorAll(`+"`"+narrow+"`"+`)) {
		const r = document.createRange();
		r.selectNodeContents(td);
		// Nested boxes (a link, its code) on one line overlap; a line
		// below starts under every box above it.
		let lines = 0, bottom = -Infinity;
		for (const q of Array.from(r.getClientRects()).filter(q => q.width > 0).sort((a, b) => a.top - b.top)) {
			if (q.top >= bottom - 2) lines++;
			bottom = Math.max(bottom, q.bottom);
		}
		if (lines > 1) out.push((td.dataset.label || td.className) + " wraps to " + lines + " lines: " + td.textContent.slice(0, 40));
	}
	return out;
})()`))
		file := filepath.Join(dir, name+"-"+w.name+".png")
		// A page thousands of pixels wide is too big to photograph whole.
		if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			if err := os.WriteFile(file, png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range problems {
			t.Errorf("%s at %s (%dpx): %s", name, w.name, w.width, p)
		}
	}
}
