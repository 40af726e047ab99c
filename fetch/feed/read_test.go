package feed_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/encoding/unicode"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/feed"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// latin1 is "Café “quoted”" in windows-1252 (ISO-8859-1 as browsers read
// it): 0xE9 is é, 0x93 and 0x94 are the curly quotes.
const latin1 = "Caf\xe9 \x93quoted\x94"

func legacyRSS(encoding string) string {
	decl := `<?xml version="1.0"?>`
	if encoding != "" {
		decl = `<?xml version="1.0" encoding="` + encoding + `"?>`
	}
	return decl + `<rss version="2.0"><channel><title>T</title>
<item><guid>a</guid><title>` + latin1 + `</title><description>na` + "\xef" + `ve</description></item></channel></rss>`
}

func TestLegacyCharsetsAreDecoded(t *testing.T) {
	cases := []struct{ name, contentType, body string }{
		{"ISO-8859-1 in the prolog", "application/rss+xml", legacyRSS("ISO-8859-1")},
		{"windows-1252 in the prolog", "application/rss+xml", legacyRSS("windows-1252")},
		{"ISO-8859-1 in Content-Type", "application/rss+xml; charset=ISO-8859-1", legacyRSS("")},
		{"both agree", "text/xml; charset=windows-1252", legacyRSS("windows-1252")},
		{"header's UTF-8 default over a declared legacy body", "text/xml; charset=utf-8", legacyRSS("ISO-8859-1")},
		{"undeclared legacy bytes", "application/rss+xml", legacyRSS("")},
		{"UTF-8 as declared", "application/rss+xml; charset=utf-8", strings.NewReplacer("\xe9", "é", "\x93", "“", "\x94", "”", "\xef", "ï").Replace(legacyRSS("UTF-8"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := fetchtest.NewUpstream(c.contentType)
			u.Set(200, c.body, "")
			h := mustFeedHarness(t, sqltest.Backends()[0], u)
			rep := h.MustRun(t, tidemark.OutcomeItems)
			ev, ok := h.Events(t)["a"]
			if !ok || ev.Title != "Café “quoted”" {
				t.Fatalf("title %q (%+v)", ev.Title, rep)
			}
			if e := h.Evidence(t, ev.ID, 0); !strings.Contains(e, `"description":"naïve\n"`) {
				t.Fatalf("evidence: %s", e)
			}
		})
	}
	if _, err := feed.Parse([]byte(legacyRSS("x-no-such-charset")), "", "", 0); !errors.Is(err, feed.ErrCharset) {
		t.Fatalf("unknown charset over a body that is not UTF-8: %v", err)
	}
	utf8Doc := strings.NewReplacer("\xe9", "é", "\x93", "“", "\x94", "”", "\xef", "ï").Replace(legacyRSS("x-no-such-charset"))
	for _, ct := range []string{"", "text/xml; charset=us-ascii", "text/xml; charset=bogus"} {
		if items, err := feed.Parse([]byte(utf8Doc), ct, "", 0); err != nil || items[0].Title != "Café “quoted”" {
			t.Fatalf("a UTF-8 body under a wrong label (%q): %v %+v", ct, err, items)
		}
	}
	utf16, err := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder().String(
		strings.Replace(utf8Doc, "x-no-such-charset", "UTF-16", 1))
	if err != nil {
		t.Fatal(err)
	}
	if items, err := feed.Parse([]byte(utf16), "application/rss+xml", "", 0); err != nil || items[0].Title != "Café “quoted”" {
		t.Fatalf("UTF-16: %v %+v", err, items)
	}
}

// A JSON Feed is what the spec (https://jsonfeed.org/version/1.1) says it
// is: a version that is the spec's URL, a title and an items array. Bare
// version numbers are taken only from a document served as a JSON Feed
// (application/feed+json): any JSON API may carry "version": "1.0" next to
// an "items" array, and reading it as a feed would drop every field but
// its id.
func TestJSONFeedIsWhatTheSpecRequires(t *testing.T) {
	entry := `"items":[{"id":"7","title":"JSON entry","content_text":"hello"}]`
	for _, v := range []string{"https://jsonfeed.org/version/1", "https://jsonfeed.org/version/1.1", "http://jsonfeed.org/version/1"} {
		for _, ctype := range []string{"", "application/json", "application/feed+json"} {
			doc := `{"version":"` + v + `","title":"J",` + entry + `}`
			items, err := feed.Parse([]byte(doc), ctype, "", 0)
			if err != nil || len(items) != 1 || items[0].Key != "7" {
				t.Errorf("version %q served as %q: %v %+v", v, ctype, err, items)
			}
		}
	}
	for _, v := range []string{"1", "1.0", "1.1"} {
		doc := `{"version":"` + v + `","title":"J",` + entry + `}`
		if items, err := feed.Parse([]byte(doc), "application/feed+json; charset=utf-8", "", 0); err != nil || len(items) != 1 {
			t.Errorf("bare version %q served as a JSON Feed: %v %+v", v, err, items)
		}
		for _, ctype := range []string{"", "application/json"} {
			if _, err := feed.Parse([]byte(doc), ctype, "", 0); !errors.Is(err, feed.ErrNotAFeed) {
				t.Errorf("bare version %q served as %q: %v, want not a feed", v, ctype, err)
			}
		}
	}
	// Any JSON object may carry a version and items: an ordinary API.
	for _, doc := range []string{`{"version":"1.0"}`, `{"version":"1.1","name":"a package"}`, `{"version":"2.0","items":[]}`,
		`{"version":"1.0","items":[{"id":1,"name":"widget","price":10}]}`,
		`{"version":"1.0","title":"Widgets","items":[{"id":1,"name":"widget","price":10}]}`,
		`{"version":"https://example.org/api/v1","title":"Widgets","items":[]}`} {
		if _, err := feed.Parse([]byte(doc), "application/json", "", 0); !errors.Is(err, feed.ErrNotAFeed) {
			t.Errorf("%s: %v, want not a feed", doc, err)
		}
	}
	// A JSON Feed by its version that lacks what the spec requires is
	// malformed, and says what it lacks.
	for doc, says := range map[string]string{
		`{"version":"https://jsonfeed.org/version/1.1",` + entry + `}`:               "title",
		`{"version":"https://jsonfeed.org/version/1.1","title":7,` + entry + `}`:     "title",
		`{"version":"https://jsonfeed.org/version/1.1","title":"J"}`:                 "items",
		`{"version":"https://jsonfeed.org/version/1.1","title":"J","items":{"a":1}}`: "items",
	} {
		_, err := feed.Parse([]byte(doc), "", "", 0)
		if err == nil || errors.Is(err, feed.ErrNotAFeed) || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want an error about %s", doc, err, says)
		}
	}
}

// A JSON Feed that starts with a UTF-8 byte-order mark is read (RFC 8259
// lets a parser ignore one), and freezes as it does without.
func TestJSONFeedWithAByteOrderMark(t *testing.T) {
	doc := `{"version":"https://jsonfeed.org/version/1.1","title":"J","items":[{"id":"7","title":"Café","content_text":"hello"}]}`
	plain, err := feed.Parse([]byte(doc), "application/feed+json", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := feed.Parse([]byte("\xef\xbb\xbf"+doc), "application/feed+json", "", 0)
	if err != nil || len(got) != 1 || got[0].Key != plain[0].Key || got[0].EvidenceHash() != plain[0].EvidenceHash() {
		t.Fatalf("with a BOM: %v %+v, want %+v", err, got, plain)
	}
}

func TestStrayControlCharacterDoesNotRefuseTheFeed(t *testing.T) {
	doc := rss(
		rssItem("a", "Bell\x07 rings", "vertical\x0btab and \x1b[escape"),
		rssItem("b", "Clean", "text with\ttab"),
		rssItem("c", "By &#1;reference&#x1b;", "&amp;#65;&#xFFFE;<![CDATA[ &#1;]]>"),
		rssItem("d", "<![CDATA[HTML &#1;entity]]>", ""),
	)
	u := newUpstream()
	u.Set(200, doc, "")
	h := mustFeedHarness(t, sqltest.Backends()[0], u)
	rep := h.MustRun(t, tidemark.OutcomeItems)
	if rep.EventsNew != 4 {
		t.Fatalf("%+v", rep)
	}
	evs := h.Events(t)
	if evs["a"].Title != "Bell rings" {
		t.Fatalf("title %q", evs["a"].Title)
	}
	if e := h.Evidence(t, evs["a"].ID, 0); !strings.Contains(e, `"description":"verticaltab and [escape\n"`) {
		t.Fatalf("only the forbidden characters may go: %s", e)
	}
	if evs["c"].Title != "By reference" {
		t.Fatalf("title %q", evs["c"].Title)
	}
	if evs["d"].Title != "HTML entity" {
		t.Fatalf("title %q", evs["d"].Title)
	}
	if e := h.Evidence(t, evs["c"].ID, 0); !strings.Contains(e, `"description":"&#65; &#1;\n"`) {
		t.Fatalf("only the forbidden references may go: %s", e)
	}
	if e := h.Evidence(t, evs["b"].ID, 0); !strings.Contains(e, `"description":"text with\ttab\n"`) {
		t.Fatalf("a tab is allowed: %s", e)
	}
}

func TestEntriesSharingAnIdentityStayApart(t *testing.T) {
	guid := []string{
		`<item><guid>same</guid><title>One</title><link>https://example.org/1</link><description>first</description></item>`,
		`<item><guid>same</guid><title>Two</title><link>https://example.org/2</link><description>second</description></item>`,
	}
	link := []string{
		`<item><title>Alpha</title><link>https://example.org/</link><description>a</description></item>`,
		`<item><title>Beta</title><link>https://example.org/</link><description>b</description></item>`,
		`<item><title>Beta</title><link>https://example.org/</link><description>b</description></item>`, // a true repeat
	}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		u := newUpstream()
		u.Set(200, rss(append(slices.Clone(guid), link...)...), "")
		h := mustFeedHarness(t, b, u)
		rep := h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsNew != 4 {
			t.Fatalf("first run: %+v, want 4 events (2 by GUID, 2 by link; the repeat is one)", rep)
		}
		before := h.Events(t)

		// The same entries in another order: the same keys, nothing new.
		slices.Reverse(guid)
		slices.Reverse(link)
		u.Set(200, rss(append(slices.Clone(link), guid...)...), "")
		rep = h.MustRun(t, tidemark.OutcomeEmpty)
		if rep.EventsNew+rep.EventsChanged != 0 {
			t.Fatalf("reordered: %+v", rep)
		}
		after := h.Events(t)
		if len(after) != 4 {
			t.Fatalf("%d events", len(after))
		}
		for k, ev := range before {
			if after[k].ID != ev.ID || after[k].Revision != 1 {
				t.Fatalf("event %q moved: %+v -> %+v", k, ev, after[k])
			}
		}
	})
}

func TestTitlesArePlainText(t *testing.T) {
	doc := rss(
		`<item><guid>1</guid><description>&lt;p&gt;Hello &lt;b&gt;world&lt;/b&gt; &amp;amp; more&lt;/p&gt;&lt;p&gt;Next&lt;/p&gt;</description></item>`,
		`<item><guid>2</guid><title><![CDATA[<em>Big</em>   news]]></title></item>`,
		`<item><guid>3</guid><title><![CDATA[Vector<int> in C++]]></title></item>`,
		`<item><guid>4</guid><title>AT&amp;amp;T</title></item>`,
		`<item><guid>5</guid><title>a &lt; b</title></item>`,
	)
	items, err := feed.Parse([]byte(doc), "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Title)
	}
	want := []string{"Hello world & more Next", "Big news", "Vector<int> in C++", "AT&T", "a < b"}
	if !slices.Equal(got, want) {
		t.Fatalf("titles %q, want %q", got, want)
	}
}

func TestOverMaxItemsIsRefusedWithTheCount(t *testing.T) {
	docs := map[string]string{
		"rss":  rss(rssItem("a", "A", ""), rssItem("b", "B", ""), rssItem("c", "C", "")),
		"atom": `<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>1</id></entry><entry><id>2</id></entry><entry><id>3</id></entry></feed>`,
		"rdf":  `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"><channel><title>T</title></channel><item><title>1</title></item><item><title>2</title></item><item><title>3</title></item></rdf:RDF>`,
		"json": `{"version":"https://jsonfeed.org/version/1.1","title":"J","items":[{"id":"1"},{"id":"2"},{"id":"3"}]}`,
	}
	for name, doc := range docs {
		if _, err := feed.Parse([]byte(doc), "", "", 2); !errors.Is(err, feed.ErrTooManyEntries) || !strings.Contains(err.Error(), "too many entries: 3, more than max_items (2)") {
			t.Errorf("%s: %v", name, err)
		}
		if items, err := feed.Parse([]byte(doc), "", "", 3); err != nil || len(items) != 3 {
			t.Errorf("%s at the limit: %v, %d items", name, err, len(items))
		}
	}
}
