package outbox_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
)

var change = outbox.Message{Title: "Release 2.0 <b> & co", Summary: "Adds *bold* things.\nFixes @everyone bugs.",
	Link: "https://wiki.example/p/1", Source: "Project feed"}

// Each kind's default template in its own markup, every field escaped for
// it, and the HTML rendering beside the text where the provider sends one.
func TestPreviewRendersEachKindsMarkup(t *testing.T) {
	for _, tc := range []struct {
		kind, body, html string
	}{
		{"matrix", "Release 2.0 <b> & co\n\nAdds *bold* things.\nFixes @\u200deveryone bugs.\n\nhttps://wiki.example/p/1",
			"<p><strong>Release 2.0 &lt;b&gt; &amp; co</strong></p><p>Adds *bold* things.<br>Fixes @\u200deveryone bugs.</p><p><a href=\"https://wiki.example/p/1\">https://wiki.example/p/1</a></p>"},
		{"slack", "*Release 2.0 &lt;b&gt; &amp; co*\n\nAdds *bold* things.\nFixes @everyone bugs.\n\n<https://wiki.example/p/1|Project feed>", ""},
		{"discord", "**Release 2.0 \\<b\\> & co**\n\nAdds \\*bold\\* things.\nFixes @\u200beveryone bugs.\n\n<https://wiki.example/p/1>", ""},
	} {
		r, err := outbox.Preview(tc.kind, "", change)
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if r.Body != tc.body || r.HTML != tc.html || r.Truncated {
			t.Errorf("%s:\n body %q\n want %q\n html %q\n want %q", tc.kind, r.Body, tc.body, r.HTML, tc.html)
		}
	}
}

// A body over the provider's limit keeps its title and link and loses the
// end of its summary, marked with …; it then fits exactly as far as it can.
func TestPreviewShortensTheSummaryToTheLimit(t *testing.T) {
	long := outbox.Message{Title: "T", Summary: strings.Repeat("word ", 1000), Link: "https://wiki.example/p/2"}
	r, err := outbox.Preview("discord", "", long)
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(r.Body); !r.Truncated || n > 2000 || n < 1990 {
		t.Fatalf("discord body of %d characters, truncated %v", n, r.Truncated)
	}
	if !strings.HasPrefix(r.Body, "**T**") || !strings.HasSuffix(r.Body, "…\n\n<https://wiki.example/p/2>") {
		t.Fatalf("the title or the link was cut: %q…%q", r.Body[:10], r.Body[len(r.Body)-40:])
	}
	// A title over the limit is cut too; only what cannot be cut (a link)
	// makes a body that cannot fit.
	r, err = outbox.Preview("discord", "{{.Title}}", outbox.Message{Title: strings.Repeat("x", 3000)})
	if err != nil || r.Body != strings.Repeat("x", 1999)+"…" || !r.Truncated {
		t.Fatalf("a title over the limit: %.20q… (%v)", r.Body, err)
	}
	if _, err := outbox.Preview("discord", "{{.Title}} {{.Link}}", outbox.Message{Title: "t", Link: "https://x.example/" + strings.Repeat("x", 3000)}); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("a link over the limit: %v", err)
	}
}

func TestTemplatesAreCheckedWhenParsed(t *testing.T) {
	for _, bad := range []string{"{{.Title", "{{.Author}}", "{{template \"x\"}}", strings.Repeat("{{.Title}}", outbox.MaxTemplateBytes/10+1)} {
		if _, err := outbox.ParseTemplate(bad); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	r, err := outbox.Preview("ntfy", "{{.Source}}: {{.Title}}\n\n\n\n{{.Summary}}\n\n{{.Link}}", outbox.Message{Title: "t", Source: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Body != "s: t" {
		t.Fatalf("empty fields leave blank lines: %q", r.Body)
	}
	if _, err := outbox.Preview("carrier-pigeon", "", change); !errors.Is(err, tidemark.ErrInvalid) {
		t.Fatalf("an unknown kind: %v", err)
	}
}

// A slack or discord link must stay one link: anything but an http(s)
// URL is dropped rather than let out of its angle brackets.
func TestPreviewDropsALinkThatCouldBreakOut(t *testing.T) {
	r, err := outbox.Preview("slack", "", outbox.Message{Title: "t", Link: "https://x.example/|<!channel>"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Body, "<!channel>") || strings.Contains(r.Body, "x.example") {
		t.Fatalf("the link broke out: %q", r.Body)
	}
}

// A text channel without a template drafts exactly what it drafted before
// templates: PublicationBody.
func TestTheDefaultTextTemplateIsThePublicationBody(t *testing.T) {
	for _, p := range []tidemark.Publication{
		{PageID: "p1", Title: "Title", Summary: "Line one.\nLine two.", PageURL: "https://wiki.example/p1"},
		{PageID: "p2", Title: "Title", Summary: "Same summary."},
		{PageID: "p3", Title: "Only a title"},
		{PageID: "p4", Title: "Widget 2.0", Summary: "Widget 2.0\n\n2026-11-30.\n\nIt syncs."},
	} {
		for _, kind := range []string{"webhook", "matrix", "email", "ntfy", "github"} {
			got, err := outbox.ChannelBody(kind, "", p, "src")
			if err != nil || got != outbox.PublicationBody(p) {
				t.Errorf("%s, %+v: %q (%v), want %q", kind, p, got, err, outbox.PublicationBody(p))
			}
		}
	}
}

// A summary that begins with the change's title (an extractive summary
// begins with its headline) does not repeat it under the title the message
// leads with; any other summary is sent whole.
func TestAMessageDoesNotRepeatItsTitle(t *testing.T) {
	for _, c := range []struct{ title, summary, want string }{
		{"Widget 2.0: sync", "Widget 2.0: sync\n\n2026-11-30 12:00 UTC.\n\nIt syncs.", "Widget 2.0: sync\n\n2026-11-30 12:00 UTC.\n\nIt syncs.\n\npage p"},
		{"Widget 2.0: sync", "  Widget 2.0: sync  \nIt syncs.", "Widget 2.0: sync\n\nIt syncs.\n\npage p"},
		{"Widget", "Widget 2.0 syncs.", "Widget\n\nWidget 2.0 syncs.\n\npage p"},
		{"Widget", "Widget", "Widget\n\npage p"},
	} {
		p := tidemark.Publication{PageID: "p", Title: c.title, Summary: c.summary}
		if got := outbox.PublicationBody(p); got != c.want {
			t.Errorf("%q / %q: body %q, want %q", c.title, c.summary, got, c.want)
		}
		r, err := outbox.Preview("slack", "", outbox.Message{Title: c.title, Summary: c.summary, Page: "p"})
		if err != nil || strings.Count(r.Body, c.title) != 1 && c.summary != "Widget 2.0 syncs." {
			t.Errorf("%q / %q: slack %q (%v) repeats the title", c.title, c.summary, r.Body, err)
		}
	}
}

// A page whose escaped body does not fit its provider is never drafted
// raw: its summary is cut, then its title, each before it is escaped (so
// no cut falls inside an escape sequence or a character), and what is
// drafted is escaped and fits.
func TestChannelBodyIsEscapedAndFittedWhenTheTitleIsLong(t *testing.T) {
	for _, tc := range []struct {
		kind, title string
		raw         []string // what must never reach the provider
	}{
		{"slack", "<!channel> [click me](https://evil.example/login) " + strings.Repeat("&", 7000) + strings.Repeat("é", 8000), []string{"<!channel>", "&&"}},
		{"discord", "@everyone [click me](https://evil.example/login) # Heading " + strings.Repeat("_", 1000) + " end", []string{" [click", "@everyone", "__"}},
		{"discord", strings.Repeat("*", 1999), []string{"\\…"}},
	} {
		p := tidemark.Publication{PageID: "p1", Title: tc.title, Summary: "body", PageURL: "https://wiki.example/p/1"}
		body, err := outbox.ChannelBody(tc.kind, "", p, "src")
		if err != nil {
			t.Errorf("%s: %v", tc.kind, err)
		}
		f, _ := outbox.FormatOf(tc.kind)
		if n := utf8.RuneCountInString(body); n > f.MaxRunes || !utf8.ValidString(body) {
			t.Errorf("%s: a body of %d characters (valid UTF-8 %v), over %d", tc.kind, n, utf8.ValidString(body), f.MaxRunes)
		}
		for _, s := range tc.raw {
			if strings.Contains(body, s) {
				t.Errorf("%s: %q reached the body: %.80q", tc.kind, s, body)
			}
		}
		if !strings.Contains(body, "…") || !strings.Contains(body, "<https://wiki.example/p/1") {
			t.Errorf("%s: the title was not cut, or the link lost: %.60q…%q", tc.kind, body, body[len(body)-40:])
		}
		// A cut never leaves half an escape: &amp; whole, or \ before its character.
		if tc.kind == "slack" && strings.Contains(strings.NewReplacer("&amp;", "", "&lt;", "", "&gt;", "").Replace(body), "&") {
			t.Errorf("slack: an escape was cut: %q", body[len(body)-80:])
		}
	}
	// What cannot fit even with no summary and a title of … (a link longer
	// than the limit) is escaped all the same, never raw: the provider
	// refuses it unsent and the intent alone is unexecutable.
	p := tidemark.Publication{PageID: "p1", Title: "@everyone <b>", PageURL: "https://wiki.example/" + strings.Repeat("x", 2100)}
	body, err := outbox.ChannelBody("discord", "", p, "src")
	if !errors.Is(err, tidemark.ErrInvalid) || strings.Contains(body, "@everyone") || strings.Contains(body, "<b>") {
		t.Fatalf("a body that cannot fit: %v, %.60q", err, body)
	}
}

// A channel's own template that cannot fit a page drafts the kind's
// default, escaped and fitted, not the raw text.
func TestChannelBodyFallsBackToTheEscapedDefault(t *testing.T) {
	p := tidemark.Publication{PageID: "p1", Title: "<!here> t", Summary: "s", PageURL: "https://wiki.example/p/1"}
	body, err := outbox.ChannelBody("discord", strings.Repeat("x", 2001)+"{{.Title}}", p, "src")
	if err == nil || body != "**\\<!here\\> t**\n\ns\n\n<https://wiki.example/p/1>" {
		t.Fatalf("body %q (%v), want the escaped default", body, err)
	}
}

// A Mastodon body is fitted to 500 characters as Mastodon counts them, a
// link 23: a long link costs the summary nothing more.
func TestPreviewFitsMastodonAsMastodonCounts(t *testing.T) {
	link := "https://wiki.example.org/" + strings.Repeat("p", 200)
	r, err := outbox.Preview("mastodon", "", outbox.Message{Title: "T", Summary: strings.Repeat("word ", 200), Link: link})
	if err != nil {
		t.Fatal(err)
	}
	body := strings.TrimSuffix(r.Body, link)
	if n := utf8.RuneCountInString(body) + 23; !r.Truncated || n > 500 || n < 490 || !strings.HasSuffix(r.Body, "…\n\n"+link) {
		t.Fatalf("a body of %d characters as Mastodon counts them (truncated %v): %q", n, r.Truncated, r.Body)
	}
}

// Upstream text cannot mention anyone where the provider would notify
// them: on GitHub, Mastodon and Matrix an @ that would begin a mention is
// followed by a zero-width joiner; an address's @ and the other kinds'
// text are left alone.
func TestPreviewNeutralisesMentions(t *testing.T) {
	m := outbox.Message{Title: "Ping @everyone and @org/team", Summary: "(@alice@mastodon.example) mail bob@example.com", Page: "p"}
	for _, kind := range []string{"github", "mastodon", "matrix"} {
		r, err := outbox.Preview(kind, "", m)
		want := "Ping @\u200deveryone and @\u200dorg/team\n\n(@\u200dalice@mastodon.example) mail bob@example.com\n\npage p"
		if err != nil || r.Body != want {
			t.Errorf("%s: %q (%v), want %q", kind, r.Body, err, want)
		}
	}
	for _, kind := range []string{"webhook", "ntfy", "email"} {
		if r, err := outbox.Preview(kind, "", m); err != nil || strings.Contains(r.Body, "\u200d") {
			t.Errorf("%s: %q (%v)", kind, r.Body, err)
		}
	}
}

// An @ inside a link (a Mastodon profile's URL) is not a mention: the link
// is left whole.
func TestPreviewLeavesAnAtInALinkAlone(t *testing.T) {
	m := outbox.Message{Title: "See https://mastodon.example/@alice and ?u=@bob", Page: "p"}
	for _, kind := range []string{"github", "mastodon", "matrix"} {
		if r, err := outbox.Preview(kind, "", m); err != nil || strings.Contains(r.Body, "\u200d") {
			t.Errorf("%s: %q (%v)", kind, r.Body, err)
		}
	}
}

// Slack offers no escape for its formatting characters, so a title the
// default template sets in *bold* would end the bold at its first *, or
// nest italics and strikes inside it: in a Slack title they are sent as
// look-alikes that do not format, and the bold holds.
func TestSlackTitleKeepsItsBold(t *testing.T) {
	r, err := outbox.Preview("slack", "", outbox.Message{Title: "*bold* _it_ ~gone~ `code` snake_case", Summary: "Adds *bold* things.", Page: "p"})
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(r.Body, "\n")
	if !strings.HasPrefix(first, "*") || !strings.HasSuffix(first, "*") || len(first) < 2 {
		t.Fatalf("title line %q: want it in *bold*", first)
	}
	if inner := first[1 : len(first)-1]; strings.ContainsAny(inner, "*_~`") {
		t.Errorf("title line %q: a formatting character inside the bold", first)
	}
	if !strings.Contains(first, "bold") || !strings.Contains(first, "snake") || !strings.Contains(first, "case") {
		t.Errorf("title line %q lost its words", first)
	}
	if !strings.Contains(r.Body, "Adds *bold* things.") {
		t.Errorf("body %q: the summary's own formatting is Slack's to show, as before", r.Body)
	}
}
