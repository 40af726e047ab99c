package feed_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/feed"
	"github.com/tidemark/tidemark/fetch/httpx"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

func rss(items ...string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>T</title><link>https://example.org/</link>
` + strings.Join(items, "\n") + `
</channel></rss>`
}

func rssItem(guid, title, desc string) string {
	return fmt.Sprintf(`<item><guid>%s</guid><title>%s</title><link>https://example.org/%s</link><description>%s</description><pubDate>Mon, 02 Jan 2026 15:04:05 GMT</pubDate></item>`, guid, title, guid, desc)
}

// newUpstream is a feed server whose answer the test changes between runs.
func newUpstream() *fetchtest.Upstream { return fetchtest.NewUpstream("application/rss+xml") }

func mustFeedHarness(t *testing.T, b sqltest.Backend, u *fetchtest.Upstream) *fetchtest.Harness {
	t.Helper()
	srv, client := fetchtest.MustServe(t, u)
	return fetchtest.MustHarness(t, b, "feed", srv.URL+"/feed.xml", nil, &feed.Fetcher{Client: client})
}

func TestEditedItemBecomesOneNewRevision(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		u := newUpstream()
		u.Set(200, rss(rssItem("a", "First", "one"), rssItem("b", "Second", "two")), "")
		h := mustFeedHarness(t, b, u)

		rep := h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsNew != 2 || rep.EventsChanged != 0 {
			t.Fatalf("first run: %+v", rep)
		}
		// The same document again: nothing new.
		rep = h.MustRun(t, tidemark.OutcomeEmpty)
		if rep.EventsNew+rep.EventsChanged != 0 {
			t.Fatalf("second run: %+v", rep)
		}
		before := h.Events(t)

		u.Set(200, rss(rssItem("a", "First", "one, edited"), rssItem("b", "Second", "two")), "")
		rep = h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsNew != 0 || rep.EventsChanged != 1 {
			t.Fatalf("edit run: %+v", rep)
		}
		after := h.Events(t)
		if len(after) != 2 {
			t.Fatalf("%d events after an edit, want 2", len(after))
		}
		a := after["a"]
		if a.Revision != 2 || a.ID != before["a"].ID || a.EvidenceHash == before["a"].EvidenceHash {
			t.Fatalf("edited item: %+v (was %+v)", a, before["a"])
		}
		if after["b"].Revision != 1 || after["b"].EvidenceHash != before["b"].EvidenceHash {
			t.Fatalf("untouched item moved: %+v", after["b"])
		}
		if ev := h.Evidence(t, a.ID, 1); !strings.Contains(ev, `"description":"one\n"`) {
			t.Fatalf("revision 1 evidence lost: %s", ev)
		}
		if ev := h.Evidence(t, a.ID, 0); !strings.Contains(ev, "one, edited") {
			t.Fatalf("current evidence: %s", ev)
		}
	})
}

func TestNotModifiedSettlesEmptyAndKeepsValidators(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		u := newUpstream()
		u.SetHeader("Last-Modified", "Mon, 02 Jan 2026 15:04:05 GMT")
		u.Set(200, rss(rssItem("a", "First", "one")), `"v1"`)
		h := mustFeedHarness(t, b, u)
		h.MustRun(t, tidemark.OutcomeItems)
		cur := h.Current(t)
		if c := httpx.DecodeValidators(cur.Cursor); c.ETag != `"v1"` || c.LastModified == "" {
			t.Fatalf("validators not stored with the cursor: %q", cur.Cursor)
		}
		rep := h.MustRun(t, tidemark.OutcomeEmpty)
		if inm := u.IfNoneMatch(); inm != `"v1"` {
			t.Fatalf("If-None-Match sent %q", inm)
		}
		after := h.Current(t)
		if after.Cursor != cur.Cursor || rep.CursorAfter != cur.Cursor {
			t.Fatalf("validators moved on 304: %q -> %q", cur.Cursor, after.Cursor)
		}
		if len(h.Events(t)) != 1 {
			t.Fatal("a 304 changed the events")
		}
	})
}

func TestFailedRunLeavesCursorThenNextRunIngestsEverything(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		u := newUpstream()
		u.Set(500, "oops", "")
		h := mustFeedHarness(t, b, u)
		h.MustRun(t, tidemark.OutcomeUnreachable)
		src := h.Current(t)
		if src.Cursor != "" || src.CursorVersion != 0 || len(h.Events(t)) != 0 {
			t.Fatalf("unreachable run moved something: cursor %q v%d", src.Cursor, src.CursorVersion)
		}
		if src.LastOutcome != tidemark.OutcomeUnreachable || !strings.Contains(src.LastError, "HTTP 500") {
			t.Fatalf("reason not on the source: %s %q", src.LastOutcome, src.LastError)
		}

		// A 200 with new validators but a broken body: the validators must
		// not advance either, or the next run would get a 304 and never
		// read the entries.
		u.Set(200, rss(rssItem("a", "A", "x"), rssItem("b", "B", "y"))[:120], `"v2"`)
		h.MustRun(t, tidemark.OutcomeInvalid)
		if c := h.Current(t).Cursor; c != "" {
			t.Fatalf("invalid run moved the cursor to %q", c)
		}

		u.Set(200, rss(rssItem("a", "A", "x"), rssItem("b", "B", "y"), rssItem("c", "C", "z")), `"v2"`)
		rep := h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsNew != 3 {
			t.Fatalf("recovery run: %+v", rep)
		}
		if c := httpx.DecodeValidators(h.Current(t).Cursor); c.ETag != `"v2"` {
			t.Fatalf("cursor after recovery: %+v", c)
		}
	})
}

func TestUnusableAnswersAreInvalid(t *testing.T) {
	full := rss(rssItem("a", "A", "x"), rssItem("b", "B", "y"))
	cases := map[string]string{
		"empty body":  "",
		"blank body":  "  \n ",
		"truncated":   full[:len(full)-40],
		"cut in item": full[:strings.Index(full, "<item>")+30],
		"malformed":   "<rss><channel><item><title>x</title></item>",
		"not a feed":  `{"hello": "world"}`,
		"html":        "<!doctype html><html><body><p>hi</p></body></html>",
		"garbage":     "\x00\x01\x02 not xml at all",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			u := newUpstream()
			u.Set(200, body, "")
			h := mustFeedHarness(t, sqltest.Backends()[0], u)
			rep := h.MustRun(t, tidemark.OutcomeInvalid)
			if h.Current(t).Cursor != "" || len(h.Events(t)) != 0 {
				t.Fatalf("invalid run wrote something (%s)", rep.Error)
			}
		})
	}
}

func TestRedirectToPrivateAddressIsRefused(t *testing.T) {
	var hits atomic.Int32
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, rss(rssItem("secret", "Secret", "internal")))
	}))
	defer private.Close()
	for _, target := range []string{private.URL + "/feed.xml", "http://192.168.0.1/feed.xml", "http://169.254.169.254/"} {
		t.Run(target, func(t *testing.T) {
			srv, client := fetchtest.MustServe(t, http.RedirectHandler(target, http.StatusFound))
			h := fetchtest.MustHarness(t, sqltest.Backends()[0], "feed", srv.URL, nil, &feed.Fetcher{Client: client})
			rep := h.MustRun(t, tidemark.OutcomeInvalid)
			if !strings.Contains(rep.Error, "refused to connect") || len(h.Events(t)) != 0 {
				t.Fatalf("got %q", rep.Error)
			}
		})
	}
	if hits.Load() != 0 {
		t.Fatalf("the private server was reached %d times", hits.Load())
	}
}

func TestUpstreamSchedulingHints(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		u := newUpstream()
		u.SetHeader("Cache-Control", "max-age=3600")
		u.Set(200, rss(rssItem("a", "A", "x")), "")
		h := mustFeedHarness(t, b, u)
		h.MustRun(t, tidemark.OutcomeItems)
		now := h.Env.Clock.Now()
		if due := h.Current(t).NextDueAt; !due.Equal(now.Add(time.Hour)) {
			t.Fatalf("next due %s, want max-age (1h) after %s", due, now)
		}
		u.SetHeader("Retry-After", "7200")
		u.Set(429, "slow down", "")
		h.MustRun(t, tidemark.OutcomeUnreachable)
		if due := h.Current(t).NextDueAt; due.Before(now.Add(2 * time.Hour)) {
			t.Fatalf("next due %s ignores Retry-After of 2h", due)
		}
	})
}

func TestSameContentFreezesToSameHash(t *testing.T) {
	a := rss(rssItem("a", "Title", "Body text"))
	// The same content with other line endings, indentation and tag order
	// of categories.
	b := strings.ReplaceAll(rss(rssItem("a", "  Title ", "Body text  \r\n")), "\n", "\r\n")
	ia, err := feed.Parse([]byte(a), "", "https://example.org/feed", 0)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := feed.Parse([]byte(b), "", "https://example.org/feed", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ia) != 1 || len(ib) != 1 || ia[0].EvidenceHash() != ib[0].EvidenceHash() {
		t.Fatalf("evidence differs:\n%s\n%s", ia[0].Evidence, ib[0].Evidence)
	}
	ia2, _ := feed.Parse([]byte(a), "", "https://example.org/feed", 0)
	if ia2[0].EvidenceHash() != ia[0].EvidenceHash() {
		t.Fatal("the same bytes hashed differently")
	}
}

func TestIdentityFallbacksAndFormats(t *testing.T) {
	doc := rss(
		`<item><title>No guid</title><link>/posts/1</link><description>d</description></item>`,
		`<item><title>Nothing</title><description>just text</description></item>`,
		`<item><guid>dup</guid><title>first</title></item>`,
		`<item><guid>dup</guid><title>second</title></item>`,
	)
	items, err := feed.Parse([]byte(doc), "", "https://example.org/feed.xml", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 4 {
		t.Fatalf("%d items, want 4 (entries sharing an identity stay apart)", len(items))
	}
	if items[0].Key != "https://example.org/posts/1" || !strings.HasPrefix(items[1].Key, "sha256:") ||
		!strings.HasPrefix(items[2].Key, "dup #") || items[2].Title != "first" || items[3].Title != "second" {
		t.Fatalf("keys: %q %q %q %q", items[0].Key, items[1].Key, items[2].Key, items[3].Key)
	}

	atom := `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>A</title>
<entry><id>urn:1</id><title>Atom entry</title><updated>2026-01-02T03:04:05Z</updated><content type="html">&lt;p&gt;hi&lt;/p&gt;</content></entry></feed>`
	items, err = feed.Parse([]byte(atom), "", "", 0)
	if err != nil || len(items) != 1 || items[0].Key != "urn:1" || items[0].OccurredAt.IsZero() {
		t.Fatalf("atom: %v %+v", err, items)
	}
	jf := `{"version":"https://jsonfeed.org/version/1.1","title":"J","items":[{"id":"7","title":"JSON entry","content_text":"hello"}]}`
	items, err = feed.Parse([]byte(jf), "", "", 0)
	if err != nil || len(items) != 1 || items[0].Key != "7" || !strings.Contains(string(items[0].Evidence), "hello") {
		t.Fatalf("json feed: %v %+v", err, items)
	}
	if _, err := feed.Parse([]byte(rss(rssItem("a", "A", ""), rssItem("b", "B", ""))), "", "", 1); err == nil {
		t.Fatal("a feed over max_items was accepted")
	}
}

// source test --cursor: the feed's cursor is its validators as a JSON
// object; anything else is refused, naming --cursor and the form.
func TestCheckCursor(t *testing.T) {
	f := &feed.Fetcher{}
	for _, bad := range []string{"garbage", `{"etag":1}`, `{"nope":"x"}`, `{"etag":"x"} tail`} {
		err := f.CheckCursor(bad)
		if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "not a feed cursor") || !strings.Contains(err.Error(), "cursor") {
			t.Errorf("%q: %v", bad, err)
		}
		var ie *tidemark.InvalidError
		if !errors.As(err, &ie) || ie.Field != "cursor" {
			t.Errorf("%q: field %+v, want cursor", bad, ie)
		}
	}
	for _, good := range []string{`{}`, `{"etag":"\"v1\""}`, `{"etag":"x","last_modified":"Mon, 02 Jan 2006 15:04:05 GMT"}`} {
		if err := f.CheckCursor(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

// An event stays the upstream entry it was made for. A feed that once gave
// one GUID to two differing entries keeps keying that GUID's entries apart
// (src.md #12): when it shrinks back to one entry under the GUID, that
// entry is the event it already had, never a revision of the event the
// other entry (or the GUID alone) had.
func TestASharedGUIDNeverMovesAnEntryIntoAnotherEvent(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		u := newUpstream()
		a, bb := rssItem("dup", "Dup A", "a"), strings.Replace(rssItem("dup", "Dup B", "b"), "example.org/dup", "example.org/b", 1)
		u.Set(200, rss(a), "")
		h := mustFeedHarness(t, b, u)
		h.MustRun(t, tidemark.OutcomeItems)
		u.Set(200, rss(a, bb), "")
		h.MustRun(t, tidemark.OutcomeItems) // B is new; A is keyed anew (documented)
		u.Set(200, rss(bb), "")
		if rep := h.Run(t); rep.EventsChanged != 0 || rep.EventsNew != 0 {
			t.Fatalf("the feed shrank back to one entry under the GUID: %+v, want no event new or changed", rep)
		}
		u.Set(200, rss(a), "")
		if rep := h.Run(t); rep.EventsChanged != 0 || rep.EventsNew != 0 {
			t.Fatalf("the other entry alone again: %+v, want no event new or changed", rep)
		}
		// No event ever held two entries.
		for key, ev := range h.Events(t) {
			first := h.Evidence(t, ev.ID, 1)
			for r := 2; r <= ev.Revision; r++ {
				if got := h.Evidence(t, ev.ID, r); strings.Contains(got, `"Dup A"`) != strings.Contains(first, `"Dup A"`) {
					t.Fatalf("event %q holds two entries:\n%s\n%s", key, first, got)
				}
			}
		}
	})
}

func mustFeedHarnessWith(t *testing.T, b sqltest.Backend, u *fetchtest.Upstream, cfg map[string]string) *fetchtest.Harness {
	t.Helper()
	srv, client := fetchtest.MustServe(t, u)
	return fetchtest.MustHarness(t, b, "feed", srv.URL+"/feed.xml", cfg, &feed.Fetcher{Client: client})
}

// rotating is a feed of two entries without GUIDs, identified by links
// that carry a parameter the server changes on every request, and whose
// <updated> is regenerated on every request too.
func rotating(run int) string {
	entry := func(n int) string {
		return fmt.Sprintf(`<entry><title>Post %d</title><link href="https://example.org/p/%d?utm_source=feed&amp;utm_campaign=c%d&amp;sid=s%d&amp;page=2"/>`+
			`<updated>2026-01-0%dT00:00:00Z</updated><content>body %d</content></entry>`, n, n, run, run, run, n)
	}
	return `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>A</title>` + entry(1) + entry(2) + `</feed>`
}

// Volatile parts of a feed are not progress (src.md #25): a source can
// name query parameters to drop from links (ignore_query; "tracking" for
// the well-known ones) and entry fields to leave out of the evidence
// (ignore), so an upstream that rotates them on every request makes no new
// event and no new revision.
func TestRotatingLinksAndDatesAreNoProgress(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		u := fetchtest.NewUpstream("application/atom+xml")
		u.Set(200, rotating(1), "")
		h := mustFeedHarnessWith(t, b, u, map[string]string{feed.ConfigIgnoreQuery: "tracking,sid", feed.ConfigIgnore: "updated"})
		if rep := h.MustRun(t, tidemark.OutcomeItems); rep.EventsNew != 2 {
			t.Fatalf("first run: %+v", rep)
		}
		for run := 2; run <= 3; run++ {
			u.Set(200, rotating(run), "")
			if rep := h.Run(t); rep.EventsNew+rep.EventsChanged != 0 {
				t.Fatalf("run %d: %+v, want nothing new or changed", run, rep)
			}
		}
		evs := h.Events(t)
		ev, ok := evs["https://example.org/p/1?page=2"]
		if len(evs) != 2 || !ok || ev.URL != "https://example.org/p/1?page=2" {
			t.Fatalf("events: %+v", evs)
		}
		if got := h.Evidence(t, ev.ID, 0); strings.Contains(got, "updated") || strings.Contains(got, "utm_") {
			t.Fatalf("evidence keeps what the source ignores: %s", got)
		}
	})
}

// Without ignore_query, a link is kept as written, tracking parameters
// and all: an entry keeps the identity and evidence earlier runs (and
// earlier releases) gave it. Dropping them by default would make every
// such entry a new event, or a revision, on the first run after an
// upgrade, and post it again to the source's channels.
func TestLinksAreKeptAsWrittenUnlessTheSourceSaysOtherwise(t *testing.T) {
	items, err := feed.Parse([]byte(rotating(1)), "", "", 0)
	if err != nil || len(items) != 2 || items[0].Key != "https://example.org/p/1?utm_source=feed&utm_campaign=c1&sid=s1&page=2" {
		t.Fatalf("%v %+v", err, items)
	}
	items, _, err = feed.ParseWith([]byte(rotating(1)), "", "", feed.Options{MaxItems: 10, IgnoreQuery: []string{"tracking"}})
	if err != nil || len(items) != 2 || items[0].Key != "https://example.org/p/1?sid=s1&page=2" {
		t.Fatalf("with tracking: %v %+v", err, items)
	}
}

// A date in the future is kept in the evidence as written, but the event
// does not occur later than it was read, so it does not sit on top of
// every listing (src.md #25).
func TestAFutureDateDoesNotPinTheEvent(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		u := newUpstream()
		u.Set(200, rss(strings.Replace(rssItem("f", "Future", "x"), "2026", "2099", 1)), "")
		h := mustFeedHarness(t, b, u)
		h.MustRun(t, tidemark.OutcomeItems)
		ev := h.Events(t)["f"]
		if ev.OccurredAt.After(time.Now()) {
			t.Fatalf("occurred at %v", ev.OccurredAt)
		}
		if got := h.Evidence(t, ev.ID, 0); !strings.Contains(got, "2099") {
			t.Fatalf("the evidence lost the date as written: %s", got)
		}
	})
}

func TestFeedIgnoreIsChecked(t *testing.T) {
	for _, bad := range []map[string]string{{feed.ConfigIgnore: "id"}, {feed.ConfigIgnore: "updatd"}, {feed.ConfigIgnoreQuery: "a b"}} {
		if err := feed.CheckConfig(bad); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%v: %v, want invalid", bad, err)
		}
	}
	if err := feed.CheckConfig(map[string]string{feed.ConfigIgnore: "updated, published", feed.ConfigIgnoreQuery: "sid,ref_*"}); err != nil {
		t.Fatal(err)
	}
}
