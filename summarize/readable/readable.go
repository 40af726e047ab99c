// Package readable turns an event's frozen evidence into content people can
// read: for a feed entry its title, link, date, author and text as clean
// prose; for a page the diff of its extracted text; for JSON the changed
// fields, old → new; for a file its change and a text diff; for a commit
// its message, diffstat and a link to the upstream commit.
//
// It is a pure function of the evidence (and the previous revision's
// evidence, itself frozen), needs no network, and guarantees that nothing
// it returns carries markup or terminal control characters from upstream,
// except Doc.HTML, which is reduced to a safe subset (allow-listed
// elements and attributes, http(s) and mailto links only).
package readable

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
)

// Input is what a Doc is built from.
type Input struct {
	// Kind is the source's kind (feed, page, json, dir, git); empty means
	// sniff it from the evidence.
	Kind string
	// Title is the event's title.
	Title string
	// Location is the source's location (used for a commit's web link).
	Location string
	// Evidence is the current frozen evidence.
	Evidence []byte
	// Previous is the previous revision's evidence (nil at revision 1).
	Previous []byte
}

// Line is one line of a diff.
type Line struct {
	// Op is "+" (added), "-" (removed), " " (context) or "@" (a gap
	// between hunks; Text says where the next hunk starts).
	Op   string
	Text string
}

// Field is a changed JSON value at Path.
type Field struct {
	Path string
	// Change is added, removed or changed.
	Change string
	Old    string
	New    string
}

// File is a file's change (dir sources).
type File struct {
	Path   string
	Change string // added, changed, removed
	Size   string
	SHA256 string
}

// Commit is a git commit's readable form.
type Commit struct {
	Hash    string
	Subject string
	// Body is the message's paragraphs after the subject, each with its
	// lines (separated by "\n", indentation kept): a reader decides which
	// are list items and which flow together.
	Body   []string
	Stat   string
	Files  []FileStat
	Author string
	URL    string // the upstream commit's web page, when the remote's web form is known
}

// FileStat is one file of a commit's numstat.
type FileStat struct {
	Path    string
	Added   string
	Deleted string
}

// Doc is an event's readable content. Every string is plain text (no
// upstream markup, no control characters) except HTML.
type Doc struct {
	Kind string
	// Headline is a one-line statement of the change.
	Headline string
	// Link is the upstream page (http or https only).
	Link       string
	Author     string
	Date       time.Time
	Categories []string
	// Prose is the item's text as plain paragraphs.
	Prose []string
	// HTML is the item's text reduced to a safe subset of HTML (feed).
	HTML string
	// Diff is a line diff (page text, a file's text, or a feed item's text
	// against its previous revision), with DiffNote when there is none to
	// show ("first capture").
	Diff     []Line
	DiffNote string
	// Fields are the changed JSON values.
	Fields []Field
	File   *File
	Commit *Commit
	// Revised is set when the doc compares against a previous revision.
	Revised bool
}

// Limits keep a page readable and bounded.
const (
	MaxDiffLines = 400
	MaxFields    = 200
	maxValue     = 300
)

// Build makes the Doc of an evidence.
func Build(in Input) Doc {
	kind := in.Kind
	if kind == "" {
		kind = sniff(in.Evidence)
	}
	var d Doc
	switch kind {
	case "feed":
		d = feedDoc(in)
	case "page":
		d = pageDoc(in)
	case "json":
		d = jsonDoc(in)
	case "dir":
		d = dirDoc(in)
	case "git":
		d = gitDoc(in)
	default:
		d = textDoc(in)
	}
	d.Kind = kind
	if d.Headline == "" {
		d.Headline = Clean(in.Title)
	}
	return d
}

func sniff(ev []byte) string {
	s := string(ev)
	switch {
	case strings.HasPrefix(s, "commit "):
		return "git"
	case strings.HasPrefix(s, "page "):
		return "page"
	case strings.HasPrefix(s, "file ") && strings.Contains(s, "\nchange "):
		return "dir"
	case json.Valid(ev):
		return "json"
	}
	return ""
}

// Clean makes upstream text safe to show anywhere as text: it drops control
// characters (terminal escapes among them) except newline and tab, and
// invalid UTF-8.
func Clean(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToValidUTF8(s, "")
	if strings.ContainsAny(s, "\x1b\u009b\u009d") {
		s = escapes.ReplaceAllString(s, "")
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\u2028' || r == '\u2029':
			return '\n'
		case unicode.IsControl(r), r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			// C0/C1 controls, and bidirectional overrides that can make a
			// line read differently from what it is.
			return -1
		}
		return r
	}, s)
}

// escapes are terminal control sequences: CSI (ESC [ or U+009B … final
// byte), OSC (ESC ] or U+009D … BEL or ST), and any other ESC pair.
var escapes = regexp.MustCompile("(?:\x1b\\[|\u009b)[0-?]*[ -/]*[@-~]|(?:\x1b\\]|\u009d)[^\x07\x1b]*(?:\x07|\x1b\\\\)?|\x1b[@-_]?")

// oneLine is Clean on one line: newlines become spaces, runs of space collapse.
func oneLine(s string) string {
	return strings.Join(strings.Fields(Clean(s)), " ")
}

// SafeLink is u when it is an absolute http(s) URL, else "".
func SafeLink(u string) string {
	u = strings.TrimSpace(u)
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return ""
	}
	return p.String()
}

// Text is the doc as plain text: the extractive summary's text and the
// body of outbound posts.
func (d Doc) Text() string {
	var parts []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	switch {
	case d.Commit != nil:
		c := d.Commit
		add(c.Subject)
		if len(c.Body) > 0 {
			// The first paragraph as one line, as extractive-v2 has
			// always written it: each line trimmed, joined by a space.
			lines := strings.Split(c.Body[0], "\n")
			for i := range lines {
				lines[i] = strings.TrimSpace(lines[i])
			}
			add(truncate(strings.Join(lines, " "), 600))
		}
		add(commitStatLine(c))
		if c.Author != "" {
			add("By " + c.Author + ".")
		}
		if c.URL != "" {
			add(c.URL)
		}
		return strings.Join(parts, "\n\n")
	}
	add(d.Headline)
	var meta []string
	if d.Author != "" {
		meta = append(meta, "By "+d.Author)
	}
	if !d.Date.IsZero() {
		meta = append(meta, d.Date.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if len(meta) > 0 {
		add(strings.Join(meta, ", ") + ".")
	}
	switch {
	case len(d.Fields) > 0:
		var b strings.Builder
		for i, f := range d.Fields {
			if i == 8 {
				fmt.Fprintf(&b, "… and %d more\n", len(d.Fields)-8)
				break
			}
			b.WriteString(fieldLine(f) + "\n")
		}
		add(b.String())
	case len(d.Diff) > 0 && d.Kind != "feed":
		var b strings.Builder
		n := 0
		for _, l := range d.Diff {
			if l.Op != "+" && l.Op != "-" {
				continue
			}
			if n == 8 {
				b.WriteString("…\n")
				break
			}
			b.WriteString(l.Op + " " + truncate(l.Text, 200) + "\n")
			n++
		}
		add(b.String())
	case len(d.Prose) > 0:
		var b strings.Builder
		for _, p := range d.Prose {
			if b.Len() > 0 && b.Len()+len(p) > 600 {
				break
			}
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(truncate(p, 600))
		}
		add(b.String())
	}
	if d.Link != "" {
		add(d.Link)
	}
	return strings.Join(parts, "\n\n")
}

func fieldLine(f Field) string {
	switch f.Change {
	case "added":
		return f.Path + ": " + truncate(f.New, 120) + " (new)"
	case "removed":
		return f.Path + ": " + truncate(f.Old, 120) + " (removed)"
	}
	return f.Path + ": " + truncate(f.Old, 120) + " → " + truncate(f.New, 120)
}

func commitStatLine(c *Commit) string {
	if c.Stat == "" {
		return ""
	}
	s := c.Stat
	if len(c.Files) > 0 {
		var names []string
		for i, f := range c.Files {
			if i == 3 {
				break
			}
			names = append(names, f.Path)
		}
		s += "; mostly " + strings.Join(names, ", ")
		if len(c.Files) > 3 {
			s += fmt.Sprintf(" and %d more", len(c.Files)-3)
		}
	}
	return s + "."
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// textDoc is any evidence of an unknown kind: its title and lines.
func textDoc(in Input) Doc {
	d := Doc{Headline: oneLine(in.Title)}
	for _, p := range paragraphs(Clean(string(in.Evidence))) {
		if p != d.Headline {
			d.Prose = append(d.Prose, p)
		}
	}
	if in.Previous != nil {
		d.Diff, d.Revised = Diff(Clean(string(in.Previous)), Clean(string(in.Evidence))), true
	}
	return d
}

// paragraphs splits text on blank lines.
func paragraphs(text string) []string {
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// MaxSearchText bounds SearchText.
const MaxSearchText = 64 << 10

// SearchText is all of the doc's text, for a full-text index: headline,
// author, categories, prose, every diff line, every field's path and
// values, a file's path, a commit's message and files.
func (d Doc) SearchText() string {
	var b strings.Builder
	w := func(s string) {
		if s != "" && b.Len() < MaxSearchText {
			b.WriteString(s)
			b.WriteByte('\n')
		}
	}
	w(d.Headline)
	w(d.Author)
	w(strings.Join(d.Categories, " "))
	for _, p := range d.Prose {
		w(p)
	}
	for _, l := range d.Diff {
		if l.Op != "@" {
			w(l.Text)
		}
	}
	for _, f := range d.Fields {
		w(f.Path + " " + f.Old + " " + f.New)
	}
	if d.File != nil {
		w(d.File.Path)
	}
	if c := d.Commit; c != nil {
		w(c.Subject)
		for _, p := range c.Body {
			w(p)
		}
		for _, f := range c.Files {
			w(f.Path)
		}
	}
	return truncate(b.String(), MaxSearchText)
}
