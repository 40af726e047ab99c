package page_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/internal/fetchtest"
	"github.com/tidemark/tidemark/fetch/page"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// newSite is a page whose answer the test changes between runs, served
// as contentType (default HTML).
func newSite(contentType string) *fetchtest.Upstream {
	if contentType == "" {
		contentType = "text/html; charset=utf-8"
	}
	return fetchtest.NewUpstream(contentType)
}

func html(price, stamp string) string {
	return `<!doctype html><html><head><title> Pricing  page </title><style>p{}</style></head><body>
<nav>Home | About</nav>
<div id="prices"><h2>Plans</h2><p>Basic: ` + price + `</p><p>Pro: 20 EUR</p><span class="stamp">rendered ` + stamp + `</span></div>
<footer>© 2026</footer><script>var x = 1;</script></body></html>`
}

func TestPageChangesBecomeRevisionsWithDiffs(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		s := newSite("")
		s.Set(200, html("10 EUR", "09:00"), "")
		srv, client := fetchtest.MustServe(t, s)
		h := fetchtest.MustHarness(t, b, "page", srv.URL+"/pricing",
			map[string]string{page.ConfigSelector: "#prices", page.ConfigIgnore: ".stamp"}, &page.Fetcher{Client: client})

		rep := h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsNew != 1 {
			t.Fatalf("first run: %+v", rep)
		}
		ev := h.Events(t)[srv.URL+"/pricing"]
		if ev.Title != "Pricing page" {
			t.Fatalf("title %q", ev.Title)
		}
		first := h.Evidence(t, ev.ID, 0)
		if !strings.Contains(first, "Plans\nBasic: 10 EUR\nPro: 20 EUR\n") || !strings.Contains(first, "(first capture)") ||
			strings.Contains(first, "Home") || strings.Contains(first, "rendered") {
			t.Fatalf("first evidence:\n%s", first)
		}

		// Only the ignored timestamp and things outside the selector move.
		s.Set(200, strings.Replace(html("10 EUR", "09:05"), "© 2026", "© 2027", 1), "")
		h.MustRun(t, tidemark.OutcomeEmpty)

		s.Set(200, html("12 EUR", "09:10"), "")
		rep = h.MustRun(t, tidemark.OutcomeItems)
		if rep.EventsChanged != 1 || rep.EventsNew != 0 {
			t.Fatalf("change run: %+v", rep)
		}
		ev2 := h.Events(t)[srv.URL+"/pricing"]
		second := h.Evidence(t, ev2.ID, 0)
		if ev2.ID != ev.ID || ev2.Revision != 2 || !strings.Contains(second, "-Basic: 10 EUR\n+Basic: 12 EUR\n") {
			t.Fatalf("revision %d evidence:\n%s", ev2.Revision, second)
		}
		if h.Evidence(t, ev.ID, 1) != first {
			t.Fatal("revision 1 evidence changed")
		}

		// The selector stops matching: invalid, and the cursor stays.
		cur := h.Current(t).Cursor
		s.Set(200, strings.Replace(html("12 EUR", "x"), `id="prices"`, `id="tariffs"`, 1), "")
		rep = h.MustRun(t, tidemark.OutcomeInvalid)
		if !strings.Contains(rep.Error, "it matched on the last run") || h.Current(t).Cursor != cur {
			t.Fatalf("lost selector: %q", rep.Error)
		}
	})
}

func TestPageEvidenceIsDeterministicOnReplay(t *testing.T) {
	s := newSite("")
	s.Set(200, html("10 EUR", "1"), "")
	srv, client := fetchtest.MustServe(t, s)
	f := &page.Fetcher{Client: client}
	src := tidemark.Source{Name: "p", Kind: "page", Location: srv.URL, Config: map[string]string{page.ConfigSelector: "#prices"}}
	r1, err := f.Fetch(context.Background(), src, "")
	if err != nil {
		t.Fatal(err)
	}
	s.Set(200, html("11 EUR", "2"), "")
	a, err := f.Fetch(context.Background(), src, r1.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	// A crash before settling: the next run replays from the same cursor.
	b, err := f.Fetch(context.Background(), src, r1.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Items) != 1 || len(b.Items) != 1 || a.Items[0].EvidenceHash() != b.Items[0].EvidenceHash() || a.Cursor != b.Cursor {
		t.Fatal("replay froze different evidence")
	}
	// Unchanged since the settled cursor: no item.
	c, err := f.Fetch(context.Background(), src, a.Cursor)
	if err != nil || len(c.Items) != 0 {
		t.Fatalf("unchanged page returned %d items (%v)", len(c.Items), err)
	}
}

func TestPageUnusableAnswers(t *testing.T) {
	cases := []struct {
		name, ctype, body, selector string
	}{
		{"empty body", "", "", ""},
		{"never matching selector", "", html("1", "1"), "#nowhere"},
		{"bad selector", "", html("1", "1"), "div[["},
		{"not a page", "application/pdf", "%PDF-1.4 binary", ""},
		{"no text", "", "<html><body><script>render()</script></body></html>", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(tc.ctype)
			s.Set(200, tc.body, "")
			srv, client := fetchtest.MustServe(t, s)
			h := fetchtest.MustHarness(t, sqltest.Backends()[0], "page", srv.URL,
				map[string]string{page.ConfigSelector: tc.selector}, &page.Fetcher{Client: client})
			h.MustRun(t, tidemark.OutcomeInvalid)
			if h.Current(t).Cursor != "" {
				t.Fatal("cursor moved")
			}
		})
	}
}

func TestPageOverMaxNodesIsInvalidWithTheReason(t *testing.T) {
	var b strings.Builder
	b.WriteString("<html><body>")
	for i := range 40 {
		fmt.Fprintf(&b, "<a href=/%d>link %d</a>", i, i) // two nodes each
	}
	b.WriteString("</body></html>")
	s := newSite("")
	s.Set(200, b.String(), "")
	srv, client := fetchtest.MustServe(t, s)
	for _, tc := range []struct {
		maxNodes string
		want     tidemark.Outcome
	}{{"50", tidemark.OutcomeInvalid}, {"100", tidemark.OutcomeItems}} {
		h := fetchtest.MustHarness(t, sqltest.Backends()[0], "page", srv.URL,
			map[string]string{page.ConfigMaxNodes: tc.maxNodes}, &page.Fetcher{Client: client})
		rep := h.MustRun(t, tc.want)
		if tc.want == tidemark.OutcomeInvalid && !strings.Contains(rep.Error, "more than 50 HTML nodes (max_nodes)") {
			t.Fatalf("reason %q", rep.Error)
		}
	}
	if _, _, err := page.Extract([]byte(b.String()), "text/html", "", "", 50); !errors.Is(err, page.ErrTooManyNodes) {
		t.Fatalf("Extract: %v", err)
	}
}

func TestExtractReadableText(t *testing.T) {
	doc := `<html><head><title>T</title></head><body><h1>Title</h1><p>Hello <b>world</b>!
   again</p><ul><li>a</li><li>b</li></ul><table><tr><td>x</td><td>1</td></tr></table><pre>  keep
    this</pre><img alt="logo"><!-- hidden --></body></html>`
	title, text, err := page.Extract([]byte(doc), "", "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "Title\nHello world! again\na\nb\n\tx\t1\n  keep\n    this\n[logo]\n"
	if title != "T" || text != want {
		t.Fatalf("title %q text %q, want %q", title, text, want)
	}
	_, plain, err := page.Extract([]byte("a\r\nb  \n"), "text/plain", "", "", 0)
	if err != nil || plain != "a\nb\n" {
		t.Fatalf("plain: %q %v", plain, err)
	}
}

func FuzzExtract(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/seed/*")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "#main", ".ad")
	}
	f.Add([]byte(html("1", "2")), "#prices", ".stamp")
	f.Add([]byte("<p>x"), "", "")
	f.Add([]byte("<pre><pre><pre>"), "pre", "p")
	f.Fuzz(func(t *testing.T, body []byte, selector, ignore string) {
		_, text, err := page.Extract(body, "text/html", selector, ignore, 0)
		if err != nil {
			return
		}
		if text == "" || !utf8.ValidString(text) {
			t.Fatalf("accepted unusable text %q", text)
		}
		_, again, _ := page.Extract(body, "text/html", selector, ignore, 0)
		if again != text {
			t.Fatal("extraction is not deterministic")
		}
		ev := page.Evidence("u", selector, page.Cursor{Hash: "x", Text: "old\n"}, text)
		if !utf8.Valid(ev) && utf8.ValidString(selector) {
			t.Fatal("evidence is not valid UTF-8")
		}
	})
}

func TestPageLongTextIsStillTrackedByHash(t *testing.T) {
	long := strings.Repeat("a line of text that makes the page long\n", 2000) // > MaxCursorText
	s := newSite("text/plain")
	s.Set(200, long+"v1\n", "")
	srv, client := fetchtest.MustServe(t, s)
	f := &page.Fetcher{Client: client}
	src := tidemark.Source{Name: "p", Kind: "page", Location: srv.URL}
	r1, err := f.Fetch(context.Background(), src, "")
	if err != nil || len(r1.Items) != 1 || len(r1.Cursor) > page.MaxCursorText {
		t.Fatalf("first fetch: %v, cursor %d bytes", err, len(r1.Cursor))
	}
	s.Set(200, long+"v2\n", "")
	r2, err := f.Fetch(context.Background(), src, r1.Cursor)
	if err != nil || len(r2.Items) != 1 || !strings.Contains(string(r2.Items[0].Evidence), "was not kept") {
		t.Fatalf("change of a long page: %v %d", err, len(r2.Items))
	}
	r3, err := f.Fetch(context.Background(), src, r2.Cursor)
	if err != nil || len(r3.Items) != 0 {
		t.Fatalf("unchanged long page: %v %d items", err, len(r3.Items))
	}
}

// A page is decoded as a browser decodes it: a byte-order mark, the
// Content-Type's charset, a <meta> declaration, else UTF-8 when the whole
// body is UTF-8 and windows-1252 when it is not. A page in a legacy
// encoding keeps its characters, so an edit of one is a change.
func TestExtractDecodesThePagesEncoding(t *testing.T) {
	cp1252 := func(s string) string { // the few characters used below
		return strings.NewReplacer("€", "\x80", "£", "\xa3", "é", "\xe9").Replace(s)
	}
	long := strings.Repeat("plain ascii text. ", 100) // past a 1024-byte prescan
	for _, tc := range []struct {
		name, contentType, body, want string
	}{
		{"header charset", "text/html; charset=windows-1252", cp1252("<p>Prix: 10 €</p>"), "Prix: 10 €\n"},
		{"header latin-1", "text/html; charset=ISO-8859-1", cp1252("<p>Café £</p>"), "Café £\n"},
		{"meta charset", "text/html", cp1252(`<html><head><meta charset="windows-1252"></head><body><p>10 €</p></body></html>`), "10 €\n"},
		{"meta http-equiv", "text/html", cp1252(`<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1"></head><body><p>Café</p></body></html>`), "Café\n"},
		{"undeclared legacy", "text/html", cp1252("<p>Café 10 €</p>"), "Café 10 €\n"},
		{"undeclared utf-8 past the prescan", "text/html", "<p>" + long + "</p><p>Café 10 €</p>", canonLong(long) + "Café 10 €\n"},
		{"utf-8 byte-order mark", "text/html", "\xef\xbb\xbf<html><head><title>Shop</title></head><body><p>Prix 10 €</p></body></html>", "Prix 10 €\n"},
		{"plain text charset", "text/plain; charset=windows-1252", cp1252("Prix: 10 €\n"), "Prix: 10 €\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, text, err := page.Extract([]byte(tc.body), tc.contentType, "", "", 0)
			if err != nil || text != tc.want {
				t.Fatalf("text %q (%v), want %q", text, err, tc.want)
			}
		})
	}
}

func canonLong(s string) string { return strings.TrimSpace(s) + "\n" }

// An edit of a character only a legacy encoding writes is a change.
func TestPageInALegacyEncodingSeesAnEdit(t *testing.T) {
	b := sqltest.Backends()[0]
	s := newSite("text/html; charset=windows-1252")
	s.Set(200, "<html><body><p>Prix: 10 \x80</p></body></html>", "")
	srv, client := fetchtest.MustServe(t, s)
	h := fetchtest.MustHarness(t, b, "page", srv.URL+"/price", nil, &page.Fetcher{Client: client})
	h.MustRun(t, tidemark.OutcomeItems)
	s.Set(200, "<html><body><p>Prix: 10 \xa3</p></body></html>", "")
	h.MustRun(t, tidemark.OutcomeItems)
	ev := h.Events(t)[srv.URL+"/price"]
	if got := h.Evidence(t, ev.ID, 0); !strings.Contains(got, "-Prix: 10 €") || !strings.Contains(got, "+Prix: 10 £") {
		t.Fatalf("the edit's evidence:\n%s", got)
	}
}

// The fetch hands Extract the Content-Type's charset: a header naming
// windows-1252 is obeyed over bytes that would also read as UTF-8, as a
// browser obeys it.
func TestPageFetchObeysTheHeadersCharset(t *testing.T) {
	s := newSite("text/html; charset=windows-1252")
	s.Set(200, "<html><body><p>Caf\xc3\xa9</p></body></html>", "")
	srv, client := fetchtest.MustServe(t, s)
	h := fetchtest.MustHarness(t, sqltest.Backends()[0], "page", srv.URL+"/c", nil, &page.Fetcher{Client: client})
	h.MustRun(t, tidemark.OutcomeItems)
	if got := h.Evidence(t, h.Events(t)[srv.URL+"/c"].ID, 0); !strings.Contains(got, "CafÃ©") {
		t.Fatalf("evidence:\n%s", got)
	}
}
