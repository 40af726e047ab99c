// Package opml reads and writes OPML subscription lists: the feeds a feed
// reader follows. Reading is bounded (size, nesting, feed count) and
// lenient about what real exports contain (HTML entities, undeclared
// charsets); writing produces OPML 2.0.
package opml

import (
	"encoding/xml"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
)

// Limits on an OPML file.
const (
	MaxBytes    = 10 << 20
	MaxDepth    = 32
	MaxOutlines = 10000
)

type document struct {
	XMLName xml.Name `xml:"opml"`
	Version string   `xml:"version,attr"`
	Head    head     `xml:"head"`
	Body    outline  `xml:"body"`
}

type head struct {
	Title       string `xml:"title"`
	DateCreated string `xml:"dateCreated,omitempty"`
	Docs        string `xml:"docs,omitempty"`
}

type outline struct {
	Text     string    `xml:"text,attr,omitempty"`
	Title    string    `xml:"title,attr,omitempty"`
	Type     string    `xml:"type,attr,omitempty"`
	XMLURL   string    `xml:"xmlUrl,attr,omitempty"`
	HTMLURL  string    `xml:"htmlUrl,attr,omitempty"`
	Outlines []outline `xml:"outline"`
}

// Feed is one feed of an OPML file: a name (a slug of its title, "" when it
// has none) and its URL. Reason is set by importers that skip it.
type Feed struct {
	Name     string `json:"name"`
	Location string `json:"location"`
	Reason   string `json:"reason,omitempty"`
}

// Parse returns the feeds of an OPML document in document order.
func Parse(r io.Reader) ([]Feed, error) {
	var doc document
	dec := xml.NewDecoder(io.LimitReader(r, MaxBytes))
	dec.Strict = false
	dec.Entity = xml.HTMLEntity
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	if err := dec.Decode(&doc); err != nil {
		return nil, tidemark.Invalidf("OPML file", "", "unreadable: %v", err)
	}
	var feeds []Feed
	var walk func(o outline, depth int) error
	walk = func(o outline, depth int) error {
		if depth > MaxDepth {
			return tidemark.Invalidf("OPML file", "", "outlines nest deeper than %d", MaxDepth)
		}
		if u := strings.TrimSpace(o.XMLURL); u != "" {
			if len(feeds) >= MaxOutlines {
				return tidemark.Invalidf("OPML file", "", "more than %d feeds", MaxOutlines)
			}
			name := o.Title
			if name == "" {
				name = o.Text
			}
			feeds = append(feeds, Feed{Name: Slug(name), Location: u})
		}
		for _, c := range o.Outlines {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(doc.Body, 0); err != nil {
		return nil, err
	}
	return feeds, nil
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// Slug makes a source name of a title: lower case letters and digits
// joined by dashes, at most 60 bytes.
func Slug(s string) string {
	s = strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 60 {
		s = strings.TrimRight(s[:60], "-")
	}
	return s
}

// Write writes feeds as an OPML 2.0 document titled title, created at now.
func Write(w io.Writer, title string, now time.Time, feeds []Feed) error {
	doc := document{Version: "2.0", Head: head{
		Title: title, DateCreated: now.UTC().Format(time.RFC1123Z), Docs: "https://opml.org/spec2.opml",
	}}
	for _, f := range feeds {
		doc.Body.Outlines = append(doc.Body.Outlines, outline{Text: f.Name, Title: f.Name, Type: "rss", XMLURL: f.Location})
	}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append([]byte(xml.Header), append(out, '\n')...))
	return err
}
