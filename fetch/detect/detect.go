// Package detect tells which kind of source a URL is, by asking it once:
// a feed (RSS, Atom, JSON Feed — directly, or discovered from an HTML
// page's <link rel="alternate">), a JSON endpoint, or a page.
package detect

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch"
	"github.com/tidemark/tidemark/fetch/canon"
	"github.com/tidemark/tidemark/fetch/feed"
	"github.com/tidemark/tidemark/fetch/httpx"
	"github.com/tidemark/tidemark/redact"
)

// Result is what a probe found.
type Result struct {
	// Kind is feed, json or page.
	Kind string `json:"kind"`
	// Location is what to watch: the URL itself, or the feed an HTML page
	// links to.
	Location string `json:"location"`
	// Title is the document's own title, when it has one.
	Title string `json:"title,omitempty"`
	// Discovered is true when Location is a feed found on an HTML page.
	Discovered bool `json:"discovered,omitempty"`
	// Alternatives are the other feeds the page announces.
	Alternatives []string `json:"alternatives,omitempty"`
}

// MaxDiscoveryChecks bounds the announced feeds Probe asks, in order.
const MaxDiscoveryChecks = 5

// DiscoveryError: an HTML page announces feeds, and none of those Probe
// asked answered as a feed. Taken as the source, each would fail every
// run.
type DiscoveryError struct {
	Page string
	// Tried are the feeds asked, in order, each with why it was refused.
	Tried []Tried
}

// Tried is one announced feed Probe asked, and why it was refused.
type Tried struct {
	URL, Reason string
}

func (e *DiscoveryError) Error() string {
	parts := make([]string, len(e.Tried))
	for i, t := range e.Tried {
		parts[i] = t.URL + ": " + t.Reason
	}
	return fmt.Sprintf("the page announces feeds, and none answers as a feed (%s)", strings.Join(parts, "; "))
}

// feedTypes are the media types of feeds announced by <link rel=alternate>.
var feedTypes = map[string]bool{
	"application/rss+xml": true, "application/atom+xml": true, "application/feed+json": true,
	"application/rdf+xml": true, "application/x-rss+xml": true,
}

// Probe fetches rawURL once and classifies it. Fetch failures are returned
// classified, as httpx returns them; an answer that looks like a feed or
// JSON but does not parse is an *UnparsedError.
//
// A feed an HTML page announces is asked too, before it is taken: of the
// announced feeds, in Discover's order, the first that answers as a feed
// (up to MaxDiscoveryChecks) is the Result's Location, and the ones
// after it (not asked) are its Alternatives; when none does, the error is a *DiscoveryError
// naming each and why.
func Probe(ctx context.Context, c *httpx.Client, rawURL string) (Result, error) {
	r, err := probe(ctx, c, rawURL)
	if err != nil || !r.Discovered {
		return r, err
	}
	announced := append([]string{r.Location}, r.Alternatives...)
	de := &DiscoveryError{Page: rawURL}
	for i, u := range announced {
		if i == MaxDiscoveryChecks {
			break
		}
		got, err := probe(ctx, c, u)
		switch {
		case ctx.Err() != nil:
			return Result{}, ctx.Err()
		case err != nil:
			de.Tried = append(de.Tried, Tried{URL: u, Reason: tidemark.Text(err)})
		case got.Kind != "feed" || got.Discovered:
			de.Tried = append(de.Tried, Tried{URL: u, Reason: "answers as a " + got.Kind + ", not a feed"})
		default:
			// The alternatives are the feeds not found broken.
			r.Location, r.Alternatives = u, slices.Clone(announced[i+1:])
			return r, nil
		}
	}
	return Result{}, de
}

func probe(ctx context.Context, c *httpx.Client, rawURL string) (Result, error) {
	resp, err := c.Get(ctx, httpx.Request{URL: rawURL, Accept: feed.Accept + ", text/html;q=0.8"})
	if err != nil {
		return Result{}, err
	}
	return Classify(resp.Body, resp.Header.Get("Content-Type"), resp.URL)
}

// UnparsedError: the answer says what it is, by its Content-Type, its root
// element or its first bytes, but does not parse as that. No kind can be
// told from it: taken for a page, it would make a source that fails every
// run, even once the upstream is fixed.
type UnparsedError struct {
	// Looks is what the answer looks like: "a feed" or "JSON".
	Looks string
	// Because says why: "served as application/xml", "root element <rss>".
	Because string
	Err     error
}

func (e *UnparsedError) Error() string {
	return fmt.Sprintf("looks like %s (%s) but does not parse: %v", e.Looks, e.Because, e.Err)
}

func (e *UnparsedError) Unwrap() error { return e.Err }

// Classify decides a kind from a body, its Content-Type (with or without
// parameters; a charset is honoured) and its URL. It reads the body with
// the same bounds a run would (max_items entries; the HTML as a token
// stream), so probing a huge document costs no more than fetching it.
//
// A body that says it is a feed or JSON and does not parse as one is an
// *UnparsedError, never a page: a feed media type (RSS, Atom, JSON Feed) or
// an XML one, a feed's root element (rss, RDF, feed), a JSON media type, or
// a body starting with { or [ that is not served as HTML or plain text.
func Classify(body []byte, contentType, base string) (Result, error) {
	r := Result{Location: base}
	trimmed := bytes.TrimLeft(body, " \t\r\n\ufeff")
	header := contentType
	contentType, _, _ = strings.Cut(contentType, ";")
	contentType = strings.ToLower(strings.TrimSpace(contentType))
	servedAs := "served as " + contentType
	isHTMLType := contentType == "text/html" || contentType == "application/xhtml+xml"
	isTextType := isHTMLType || contentType == "text/plain"
	isFeedType := strings.Contains(contentType, "rss") || strings.Contains(contentType, "atom") || contentType == "application/feed+json"
	isXMLType := !isHTMLType && (contentType == "application/xml" || contentType == "text/xml" || strings.HasSuffix(contentType, "+xml"))
	isJSONType := strings.Contains(contentType, "json")
	looksJSON := len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
	_, err := feed.Parse(body, header, base, fetch.DefaultMaxItems)
	if err == nil || errors.Is(err, feed.ErrTooManyEntries) {
		r.Kind = "feed"
		return r, nil
	}
	if isJSONType || looksJSON {
		_, jerr := canon.Decode(body)
		switch {
		case jerr == nil && (isFeedType || !errors.Is(err, feed.ErrNotAFeed)):
			// A JSON Feed by its media type or its version, unusable as one.
			because := servedAs
			if !isFeedType {
				because = "a JSON Feed version"
			}
			return Result{}, &UnparsedError{Looks: "a feed", Because: because, Err: err}
		case jerr == nil:
			r.Kind = "json"
			return r, nil
		case isJSONType:
			return Result{}, &UnparsedError{Looks: "JSON", Because: servedAs, Err: jerr}
		case !isTextType:
			return Result{}, &UnparsedError{Looks: "JSON", Because: fmt.Sprintf("starts with %q", trimmed[0]), Err: jerr}
		}
	}
	var because []string
	if isFeedType || isXMLType {
		because = append(because, servedAs)
	}
	if root := xmlRoot(trimmed); feedRoots[strings.ToLower(root)] {
		because = append(because, "root element <"+root+">")
	}
	if len(because) > 0 {
		return Result{}, &UnparsedError{Looks: "a feed", Because: strings.Join(because, ", "), Err: err}
	}
	if isHTMLType || bytes.HasPrefix(bytes.ToLower(trimmed), []byte("<!doctype html")) || bytes.HasPrefix(bytes.ToLower(trimmed), []byte("<html")) {
		title, feeds := Discover(body, base)
		r.Title = title
		if len(feeds) > 0 {
			return Result{Kind: "feed", Location: feeds[0], Title: title, Discovered: true, Alternatives: feeds[1:]}, nil
		}
	}
	r.Kind = "page"
	return r, nil
}

// feedRoots are the root elements of XML feeds (lower-cased): RSS 0.9x and
// 2.0, RSS 1.0 (rdf:RDF), Atom.
var feedRoots = map[string]bool{"rss": true, "rdf": true, "feed": true}

// xmlRoot is the local name of the first element of a body that starts
// like XML (""when there is none): enough to tell a feed that does not
// parse from other markup.
func xmlRoot(body []byte) string {
	if len(body) == 0 || body[0] != '<' {
		return ""
	}
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = false
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	for range 64 { // a prolog is a few tokens; a body is never read through
		tok, err := d.RawToken()
		if err != nil {
			return ""
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local
		}
	}
	return ""
}

// Discover returns an HTML page's title and the feeds it announces with
// <link rel="alternate" type="application/rss+xml" href="…"> (and Atom,
// JSON Feed), as absolute URLs in document order, except that a comments
// feed (its title or URL says "comment", as WordPress's "Comments Feed"
// and /comments/feed/) comes after the others: a blog's main feed is what
// a reader subscribing to the blog means, whichever it announces first.
// It reads the page as a token stream (one token at a time), never as a
// tree.
func Discover(body []byte, base string) (title string, feeds []string) {
	baseURL, _ := url.Parse(base)
	var links []map[string]string // rel, type, href of <link href> in order
	baseSeen, titleSeen := false, false
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		switch atom.Lookup(name) {
		case atom.Title:
			if titleSeen || tt == html.SelfClosingTagToken {
				continue
			}
			titleSeen = true
			if z.Next() == html.TextToken { // <title> holds text only
				title = canon.Line(string(z.Text()))
			}
		case atom.Base, atom.Link:
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				if _, dup := attrs[string(k)]; !dup {
					attrs[string(k)] = string(v)
				}
			}
			href, ok := attrs["href"]
			switch {
			case !ok:
			case atom.Lookup(name) == atom.Base:
				if !baseSeen && baseURL != nil {
					baseSeen = true
					if u, err := baseURL.Parse(href); err == nil {
						baseURL = u
					}
				}
			default:
				links = append(links, attrs)
			}
		}
	}
	// A <base> anywhere applies to every link, as in the tree.
	seen := map[string]bool{}
	var comments []string
	for _, l := range links {
		alternate := false
		for _, r := range strings.Fields(strings.ToLower(l["rel"])) {
			alternate = alternate || r == "alternate"
		}
		if !alternate || !feedTypes[strings.ToLower(strings.TrimSpace(l["type"]))] {
			continue
		}
		href := strings.TrimSpace(l["href"])
		if baseURL != nil {
			u, err := baseURL.Parse(href)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
				continue
			}
			href = u.String()
		}
		if href != "" && !seen[href] {
			seen[href] = true
			if strings.Contains(strings.ToLower(l["title"]), "comment") || strings.Contains(strings.ToLower(href), "comment") {
				comments = append(comments, href)
				continue
			}
			feeds = append(feeds, href)
		}
	}
	return title, append(feeds, comments...)
}

// CheckURL refuses a location that is not an absolute http(s) URL.
func CheckURL(loc string) error {
	u, err := url.Parse(loc)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return tidemark.Invalidf("location", redact.Location(loc), "want an absolute http:// or https:// URL")
	}
	if u.User != nil {
		return tidemark.Invalidf("location", redact.Location(loc), "credentials in the URL would be stored in plain text")
	}
	return nil
}

// Name derives a source name from a URL: host and path, slug-like.
func Name(loc string) string {
	u, err := url.Parse(loc)
	if err != nil || u.Host == "" {
		return loc
	}
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(u.Hostname(), "www."))
	for _, part := range strings.Split(strings.Trim(u.Path, "/"), "/") {
		part = strings.TrimSuffix(part, ".xml")
		if part == "" || part == "feed" || part == "rss" || part == "atom" || part == "index.html" {
			continue
		}
		b.WriteString("-" + part)
	}
	return b.String()
}
