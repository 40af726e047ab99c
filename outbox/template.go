package outbox

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox/provider"
)

// Message is what a channel says about a change: the fields its template
// reads. Each reaches the template escaped for the channel's markup, so a
// title cannot become a mention or a link it did not hold.
type Message struct {
	Title   string `json:"title"`
	Summary string `json:"summary"`
	// Link is where the change's page can be read ("" when unknown).
	Link string `json:"link"`
	// Source is the name of the source that changed.
	Source string `json:"source"`
	// Page is the change's page id: the default templates name it where
	// there is no link, so two changes with the same title and summary are
	// still two different writes.
	Page string `json:"page,omitempty"`
}

// Markups a channel's body is written in.
const (
	MarkupText     = "text"     // plain text
	MarkupMrkdwn   = "mrkdwn"   // Slack: *bold*, <url|label>; & < > escaped
	MarkupMarkdown = "markdown" // Discord: **bold**, <url>; markdown characters escaped
)

// Format is how a provider kind takes a message: the markup of its body,
// whether it sends an HTML rendering beside it, the most one write may
// hold, and the template a channel uses when it sets none.
type Format struct {
	Kind   string `json:"kind"`
	Markup string `json:"markup"`
	// HTML: the provider sends provider.TextHTML of the body beside it
	// (Matrix's formatted_body, an email's text/html part).
	HTML bool `json:"html"`
	// MaxRunes and MaxBytes bound the body (0: no bound of that kind).
	MaxRunes int `json:"max_runes,omitempty"`
	MaxBytes int `json:"max_bytes,omitempty"`
	// URLRunes, when set, is what the provider counts a link as towards
	// MaxRunes, however long (Mastodon: 23), and it counts grapheme
	// clusters (provider.LinkedLength).
	URLRunes int `json:"url_runes,omitempty"`
	// Mentions: the provider notifies whom its text mentions (@user on
	// GitHub and Mastodon, a user id or @room on Matrix), so the fields of
	// a text body are sent with every @ that would begin a mention
	// followed by a zero-width joiner.
	Mentions bool `json:"mentions,omitempty"`
	// Template is the default template.
	Template string `json:"template"`
}

// The default templates. The text one drafts exactly PublicationBody,
// its mentions neutralised where the provider has them.
const (
	pageRef          = "{{if .Link}}{{.Link}}{{else if .Page}}page {{.Page}}{{end}}"
	textTemplate     = "{{.Title}}\n\n{{.Summary}}\n\n" + pageRef
	mrkdwnTemplate   = "*{{.Title}}*\n\n{{.Summary}}\n\n{{if .Link}}<{{.Link}}|{{if .Source}}{{.Source}}{{else}}read more{{end}}>{{else if .Page}}page {{.Page}}{{end}}"
	markdownTemplate = "**{{.Title}}**\n\n{{.Summary}}\n\n{{if .Link}}<{{.Link}}>{{else if .Page}}page {{.Page}}{{end}}"
)

// formats are the provider kinds' formats, from their documented limits.
// The numbers are the provider packages' own (matrix.MaxBodyBytes,
// email.MaxBodyBytes, slack.MaxText, discord.MaxContent,
// ntfy.DefaultMaxBytes, mastodon.MaxCharacters and URLCharacters,
// github.MaxCommentCharacters), written here so the outbox's rules import no
// provider; a test in outbox/providers holds them equal.
var formats = map[string]Format{
	"matrix":   {Markup: MarkupText, HTML: true, MaxBytes: 60000, Mentions: true, Template: textTemplate},
	"email":    {Markup: MarkupText, HTML: true, MaxBytes: 1 << 20, Template: textTemplate},
	"slack":    {Markup: MarkupMrkdwn, MaxRunes: 40000, Template: mrkdwnTemplate},
	"discord":  {Markup: MarkupMarkdown, MaxRunes: 2000, Template: markdownTemplate},
	"ntfy":     {Markup: MarkupText, MaxBytes: 4096, Template: textTemplate},
	"mastodon": {Markup: MarkupText, MaxRunes: 500, URLRunes: 23, Mentions: true, Template: textTemplate}, // a status's default limit
	"github":   {Markup: MarkupText, MaxRunes: 65536, Mentions: true, Template: textTemplate},             // a comment's limit
	"webhook":  {Markup: MarkupText, Template: textTemplate},
}

// FormatOf returns the format of a provider kind (false: no such kind).
func FormatOf(kind string) (Format, bool) {
	f, ok := formats[kind]
	f.Kind = kind
	return f, ok
}

// Rendered is what a channel would send for a message.
type Rendered struct {
	Kind   string `json:"kind"`
	Markup string `json:"markup"`
	// Body is the intent's body: what is sent, and what the intent's
	// identity is computed on.
	Body string `json:"body"`
	// HTML is what the provider sends beside the body, if anything.
	HTML string `json:"html,omitempty"`
	// Truncated: the summary was shortened (ending in …) so the body fits
	// Limit, and the title too when even no summary did not fit.
	Truncated bool   `json:"truncated"`
	Limit     string `json:"limit,omitempty"`
}

// Preview renders what a channel of a lane of the given provider kind would
// send for a message, without sending anything: the template (the kind's
// default when tmpl is blank) over the message's fields escaped for the
// kind's markup, blank runs of lines closed up, and the summary (then, if
// need be, the title) shortened until the body fits the kind's limit. A
// template that does not parse, or reads a field a message does not have,
// is tidemark.ErrInvalid with the reason; so is a body that cannot fit
// even with no summary and its title cut, returned escaped in Body.
func Preview(kind, tmpl string, m Message) (Rendered, error) {
	f, ok := FormatOf(kind)
	if !ok {
		return Rendered{}, tidemark.Invalidf("provider", kind, "no such provider kind")
	}
	if strings.TrimSpace(tmpl) == "" {
		tmpl = f.Template
	}
	t, err := ParseTemplate(tmpl)
	if err != nil {
		return Rendered{}, err
	}
	return t.render(f, m)
}

// MaxTemplateBytes bounds a channel's template.
const MaxTemplateBytes = 16 << 10

// Template is a channel's message template, parsed.
type Template struct{ t *template.Template }

// ParseTemplate parses a channel's template (Go text/template over a
// Message: {{.Title}}, {{.Summary}}, {{.Link}}, {{.Source}}) and checks it
// against an example message, so a template that would fail on every
// change is refused when it is set, not when a page is published.
func ParseTemplate(text string) (*Template, error) {
	if len(text) > MaxTemplateBytes {
		return nil, tidemark.Invalidf("template", "", "%d bytes, more than the %d a template may have", len(text), MaxTemplateBytes)
	}
	t, err := template.New("channel").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, tidemark.Invalidf("template", text, "%v", err)
	}
	if err := t.Execute(&bytes.Buffer{}, Message{Title: "t", Summary: "s", Link: "https://example.org/", Source: "src", Page: "p"}); err != nil {
		return nil, tidemark.Invalidf("template", text, "%v (a template reads .Title, .Summary, .Link, .Source and .Page)", err)
	}
	return &Template{t: t}, nil
}

// Render is Preview with a parsed template.
func (t *Template) Render(kind string, m Message) (Rendered, error) {
	f, ok := FormatOf(kind)
	if !ok {
		return Rendered{}, tidemark.Invalidf("provider", kind, "no such provider kind")
	}
	return t.render(f, m)
}

func (t *Template) render(f Format, m Message) (Rendered, error) {
	esc, escTitle := escaper(f), titleEscaper(f)
	title, summary := []rune(oneLine(m.Title)), []rune(summaryAfterTitle(m.Title, m.Summary))
	// with renders the template over the first nt runes of the title and
	// ns of the summary, each marked … where it was cut (a cut title
	// drops the summary). The fields are cut before they are escaped, so a
	// cut never falls inside an escape sequence (Slack's &amp;, Discord's
	// \*) or a character.
	with := func(nt, ns int) (string, error) {
		s := cut(summary, ns)
		if nt < len(title) {
			s = ""
		}
		return t.exec(Message{Title: escTitle(cut(title, nt)), Summary: esc(s), Link: linkEscape(f.Markup, m.Link),
			Source: esc(oneLine(m.Source)), Page: esc(oneLine(m.Page))})
	}
	out := Rendered{Kind: f.Kind, Markup: f.Markup, Limit: limitText(f)}
	body, err := with(len(title), len(summary))
	if err != nil {
		return out, err
	}
	if !fits(f, body) {
		// Shorten the summary, the longest part and the one a reader can
		// follow the link for, to the longest that fits; then, if even no
		// summary does not fit, the title.
		out.Truncated = true
		b, ok, err := longest(len(summary), func(n int) (string, error) { return with(len(title), n) }, f)
		if err != nil {
			return out, err
		}
		if !ok {
			b, ok, err = longest(len(title), func(n int) (string, error) { return with(n, 0) }, f)
			if err != nil {
				return out, err
			}
		}
		if !ok {
			// Nothing fits (a link or the template's own text is over the
			// limit): the body is escaped all the same, never raw, and the
			// provider refuses it unsent.
			out.Body = body
			return out, tidemark.Invalidf("template", "", "the message is longer than %s even with no summary and its title cut", out.Limit)
		}
		body = b
	}
	out.Body = body
	if f.HTML {
		out.HTML = provider.TextHTML(body)
	}
	return out, nil
}

// longest returns the body render(n) makes for the largest n below max
// whose body fits f (false when not even render(0) fits).
func longest(max int, render func(n int) (string, error), f Format) (string, bool, error) {
	body, err := render(0)
	if err != nil || !fits(f, body) {
		return "", false, err
	}
	lo, hi := 0, max // lo fits, hi does not
	for lo+1 < hi {
		mid := (lo + hi) / 2
		b, err := render(mid)
		if err != nil {
			return "", false, err
		}
		if fits(f, b) {
			lo, body = mid, b
		} else {
			hi = mid
		}
	}
	return body, true, nil
}

// cut is the first n runes of s, trimmed and ended by … when that is not
// all of s.
func cut(s []rune, n int) string {
	if n >= len(s) {
		return string(s)
	}
	return strings.TrimSpace(string(s[:n])) + "…"
}

func (t *Template) exec(m Message) (string, error) {
	var b bytes.Buffer
	if err := t.t.Execute(&b, m); err != nil {
		return "", tidemark.Invalidf("template", "", "%v", err)
	}
	return closeUp(b.String()), nil
}

// closeUp trims the body and closes runs of blank lines (left by an empty
// field) to one.
func closeUp(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var out []string
	blank := false
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			if blank {
				continue
			}
			blank = true
		} else {
			blank = false
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func fits(f Format, body string) bool {
	if f.MaxBytes > 0 && len(body) > f.MaxBytes {
		return false
	}
	switch {
	case f.MaxRunes == 0:
		return true
	case f.URLRunes > 0:
		return provider.LinkedLength(body, f.URLRunes) <= f.MaxRunes
	}
	return utf8.RuneCountInString(body) <= f.MaxRunes
}

func limitText(f Format) string {
	switch {
	case f.MaxRunes > 0 && f.URLRunes > 0:
		return fmt.Sprintf("%d characters (a link counts %d)", f.MaxRunes, f.URLRunes)
	case f.MaxRunes > 0:
		return fmt.Sprintf("%d characters", f.MaxRunes)
	case f.MaxBytes > 0:
		return fmt.Sprintf("%d bytes", f.MaxBytes)
	}
	return ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// escaper returns the escaping of text for a format's markup.
func escaper(f Format) func(string) string {
	switch f.Markup {
	case MarkupMrkdwn:
		// Slack's documented escapes: &, < and > (so no <!channel> or
		// <url|label> can be smuggled in); its formatting characters are
		// left alone, as Slack offers no escape for them.
		return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace
	case MarkupMarkdown:
		// Discord's markdown: a backslash before each formatting
		// character, and no mention can ping (the provider also sends
		// allowed_mentions with nothing to parse).
		return strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`, ">", `\>`, "<", `\<`,
			"#", `\#`, "[", `\[`, "]", `\]`, "@", "@\u200b").Replace
	}
	if f.Mentions {
		return neutraliseMentions
	}
	return func(s string) string { return s }
}

// mrkdwnLookalikes are Slack's formatting characters (bold, italic, strike,
// code) and characters that look like them but format nothing: Slack has
// no escape for them.
var mrkdwnLookalikes = strings.NewReplacer("*", "\u2217", "_", "\u02cd", "~", "\u223c", "`", "\u02cb")

// titleEscaper returns the escaping of a title for a format's markup: the
// fields' escaping, and in Slack's mrkdwn, where the default template sets
// the title in *bold*, its formatting characters sent as look-alikes, so a
// * in the title cannot end the bold nor _ or ~ nest inside it.
func titleEscaper(f Format) func(string) string {
	esc := escaper(f)
	if f.Markup != MarkupMrkdwn {
		return esc
	}
	return func(s string) string { return mrkdwnLookalikes.Replace(esc(s)) }
}

// mentionRE is an @ that begins a mention on GitHub (@user, @org/team),
// Mastodon (@user, @user@instance) or Matrix (@user:server, @room): at the
// start of a word, before a letter, a digit or _. An address's @ is not,
// nor one after / or = (in a link: https://mastodon.example/@alice), which
// none of them takes for a mention.
var mentionRE = regexp.MustCompile(`(^|[^\p{L}\p{N}_/=])@([\p{L}\p{N}_])`)

// neutraliseMentions puts a zero-width joiner after every @ that would
// begin a mention, so the text reads the same and notifies no one. The
// joiner is kept as sent (GitHub's and Matrix's bodies, Mastodon's
// visible text), so what the listing returns matches the body.
func neutraliseMentions(s string) string {
	return mentionRE.ReplaceAllString(s, "$1@\u200d$2")
}

// linkEscape keeps a link usable in the markup: only a link that is one
// http(s) URL is kept (anything else could break out of <…>).
func linkEscape(markup, link string) string {
	link = strings.TrimSpace(link)
	if link == "" {
		return ""
	}
	if markup == MarkupText {
		return link
	}
	if !(strings.HasPrefix(link, "https://") || strings.HasPrefix(link, "http://")) || strings.ContainsAny(link, " \t\n<>|") {
		return ""
	}
	return link
}

// ChannelBody is the body a channel drafts for a published page: its
// template (the kind's default when blank) over the publication and the
// source's name, escaped and fitted. A template that fails on this page
// drafts the kind's default instead, and says why: a publication is never
// refused for its notification. What is drafted is always escaped for the
// kind's markup: a page whose body cannot fit even with no summary and its
// title cut (a link over the limit) drafts it escaped and over the limit,
// which the provider refuses unsent, so that intent alone is unexecutable.
func ChannelBody(kind, tmpl string, p tidemark.Publication, source string) (string, error) {
	m := Message{Title: p.Title, Summary: p.Summary, Link: p.PageURL, Source: source, Page: p.PageID}
	r, err := Preview(kind, tmpl, m)
	if err == nil {
		return r.Body, nil
	}
	if _, ok := FormatOf(kind); !ok {
		// No markup to escape for; no provider of this kind can send it.
		return PublicationBody(p), err
	}
	if strings.TrimSpace(tmpl) != "" {
		if d, derr := Preview(kind, "", m); d.Body != "" {
			if derr != nil {
				err = fmt.Errorf("%w; the default does not fit either: %w", err, derr)
			}
			return d.Body, err
		}
	}
	if r.Body != "" {
		return r.Body, err
	}
	// The default templates always render (ParseTemplate checked them).
	return PublicationBody(p), err
}

// ChannelTest is what a channel would send for its source's latest
// published page (or a sample when there is none), rendered with tmpl or,
// when tmpl is blank, the channel's own template.
type ChannelTest struct {
	Channel Channel `json:"channel"`
	// Sample: the source has no published page yet; the message is made up.
	Sample  bool    `json:"sample"`
	Message Message `json:"message"`
	Rendered
}

// WriteText writes the body as it would be sent.
func (t ChannelTest) WriteText(w io.Writer) error {
	what := "its latest published page"
	if t.Sample {
		what = "a sample change (the source has published nothing yet)"
	}
	fmt.Fprintf(w, "channel %s (%s on lane %s, %s) would send, for %s:\n\n%s\n", t.Channel.ID, t.Channel.Target, t.Channel.Lane, t.Kind, what, t.Body)
	if t.Truncated {
		fmt.Fprintf(w, "\n(shortened to fit %s: the summary, then if need be the title)\n", t.Limit)
	}
	return nil
}
