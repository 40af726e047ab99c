// Package page watches an HTML page, optionally narrowed by a CSS
// selector. The readable text of the page (or of what the selector
// matched) is extracted and canonicalized; a change is a different hash of
// that text. The page is one item whose evidence is the text and a unified
// diff against the previous revision's text, so each change re-freezes the
// same event as a new revision.
//
// The cursor keeps the validators, the text's hash, whether the selector
// matched, and the text itself up to MaxCursorText bytes: the evidence is a
// function of the previous cursor and the current page only, so a replay
// after a crash freezes the same bytes and the same hash, and an unchanged
// page returns no item.
//
// Memory is bounded by the limits, not by the page: the body by max_bytes,
// the document tree by max_nodes, counted before the tree is built.
package page

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"mime"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"github.com/pmezard/go-difflib/difflib"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch"
	"github.com/tidemark/tidemark/fetch/canon"
	"github.com/tidemark/tidemark/fetch/httpx"
)

// Config keys understood in a page source's config.
const (
	// ConfigSelector narrows the page to what a CSS selector matches.
	ConfigSelector = "selector"
	// ConfigIgnore is a CSS selector of volatile parts (timestamps, ads,
	// counters) removed before the text is extracted.
	ConfigIgnore = "ignore"
	// ConfigMaxBytes bounds the body size.
	ConfigMaxBytes = "max_bytes"
	// ConfigMaxNodes bounds the HTML nodes (elements, text runs,
	// comments) of a page (default DefaultMaxNodes): the document tree
	// costs a few hundred bytes a node, so this and max_bytes bound the
	// memory a page takes, whatever it holds.
	ConfigMaxNodes = "max_nodes"
)

// DefaultMaxNodes is the default node bound: far above real pages (a long
// article has tens of thousands), low enough that the tree of a page at
// the bound stays within a small multiple of the default body limit.
const DefaultMaxNodes = 250000

// MaxCursorText bounds the previous text kept in the cursor (which every
// run row copies); a longer text is diffed as "not kept" but still hashed,
// so changes are still detected.
const MaxCursorText = 64 << 10

// Fetcher watches pages through an httpx.Client.
type Fetcher struct {
	Client *httpx.Client
}

// Cursor is the page kind's cursor.
type Cursor struct {
	httpx.Validators
	// Hash is the SHA-256 of the last settled text ("" before the first).
	Hash string `json:"hash,omitempty"`
	// Matched: the selector matched on the last settled run.
	Matched bool `json:"matched,omitempty"`
	// Text is the last settled text when it is at most MaxCursorText.
	Text string `json:"text,omitempty"`
}

// DecodeCursor reads a cursor; an empty or unreadable one is the zero
// Cursor.
func DecodeCursor(s string) Cursor {
	var c Cursor
	if s != "" {
		_ = json.Unmarshal([]byte(s), &c)
	}
	return c
}

func (c Cursor) encode() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// ResolveCursor checks a skip target: the kind's cursor (Cursor) as a
// JSON object (fetch.CheckCursor). It is stored as given.
func (f *Fetcher) ResolveCursor(_ context.Context, _ tidemark.Source, to string) (string, error) {
	var c Cursor
	if err := fetch.CheckCursor("page", to, &c); err != nil {
		return "", err
	}
	return to, nil
}

// ErrNoMatch: the selector matched nothing.
var ErrNoMatch = errors.New("page: selector matched nothing")

// ErrTooManyNodes: the page has more HTML nodes than max_nodes.
var ErrTooManyNodes = errors.New("page: more HTML nodes than the limit")

// ErrNoText: the page has no readable text.
var ErrNoText = errors.New("page: no readable text")

// Fetch implements tidemark.Fetcher.
func (f *Fetcher) Fetch(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
	ctx = httpx.WithAllowPrivate(ctx, src.AllowPrivate) // the source's own setting, never the process's
	maxBytes, err := fetch.IntConfig(src.Config, ConfigMaxBytes, 0)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	maxNodes, err := fetch.IntConfig(src.Config, ConfigMaxNodes, DefaultMaxNodes)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	prev := DecodeCursor(cursor)
	resp, err := f.Client.Get(ctx, httpx.Request{
		URL: src.Location, Accept: "text/html, application/xhtml+xml, text/plain;q=0.8, */*;q=0.1",
		Validators: prev.Validators, MaxBodyBytes: maxBytes,
	})
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	if resp.NotModified {
		return tidemark.FetchResult{Cursor: cursor, NotBefore: resp.MaxAge}, nil
	}
	sel := src.Config[ConfigSelector]
	body := resp.Body
	resp.Body = nil // Extract is the body's last user: it may be collected once parsed
	title, text, err := Extract(body, resp.Header.Get("Content-Type"), sel, src.Config[ConfigIgnore], int(maxNodes))
	switch {
	case errors.Is(err, ErrNoMatch) && prev.Matched:
		return tidemark.FetchResult{}, tidemark.Unusable(fmt.Sprintf("selector %q matched nothing; it matched on the last run", sel), err)
	case errors.Is(err, ErrNoMatch):
		return tidemark.FetchResult{}, tidemark.Unusable(fmt.Sprintf("selector %q matched nothing", sel), err)
	case err != nil:
		return tidemark.FetchResult{}, tidemark.Unusable("unusable page", err)
	}
	next := Cursor{Validators: resp.Validators, Hash: hashText(text), Matched: sel != ""}
	if len(text) <= MaxCursorText {
		next.Text = text
	}
	res := tidemark.FetchResult{Cursor: next.encode(), NotBefore: resp.MaxAge}
	if next.Hash == prev.Hash {
		return res, nil // the same text: nothing changed
	}
	if title == "" {
		title = src.Location
	}
	res.Items = []tidemark.Item{{
		Key:      src.Location,
		Title:    title,
		URL:      resp.URL,
		Evidence: Evidence(src.Location, sel, prev, text),
	}}
	return res, nil
}

// Evidence is the frozen evidence of a page change: what was watched, the
// text's hash, the text, and a unified diff against the previous text. It
// depends only on its arguments.
func Evidence(location, selector string, prev Cursor, text string) []byte {
	var b bytes.Buffer
	b.Grow(len(location) + len(selector) + len(text) + 256)
	fmt.Fprintf(&b, "page %s\n", location)
	if selector != "" {
		fmt.Fprintf(&b, "selector %s\n", canon.Line(selector))
	}
	fmt.Fprintf(&b, "sha256 %s\n", hashText(text))
	if prev.Hash != "" {
		fmt.Fprintf(&b, "previous %s\n", prev.Hash)
	}
	b.WriteString("\n--- text\n")
	b.WriteString(text)
	b.WriteString("\n--- diff\n")
	switch {
	case prev.Hash == "":
		b.WriteString("(first capture)\n")
	case prev.Text == "" && prev.Hash != tidemark.HashEvidence(nil):
		fmt.Fprintf(&b, "(previous text over %d bytes was not kept)\n", MaxCursorText)
	default:
		d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(prev.Text), B: difflib.SplitLines(text),
			FromFile: "previous", ToFile: "current", Context: 3,
		})
		b.WriteString(d)
	}
	return b.Bytes()
}

// decode returns a page's body as UTF-8, decoded as a browser decodes it:
// by its byte-order mark, the Content-Type's charset, then (HTML only) a
// <meta> declaration in its first 1024 bytes (WHATWG labels: ISO-8859-1
// reads as windows-1252). A body that declares nothing is UTF-8 when all
// of it is, else windows-1252 (the browser's default; it decodes every
// byte). A byte-order mark is not text: it is dropped, so a server that
// starts or stops sending one changes nothing.
func decode(body []byte, contentType string, isHTML bool) []byte {
	var enc encoding.Encoding
	if isHTML {
		e, name, certain := charset.DetermineEncoding(body, contentType)
		// Uncertain is a <meta> declaration or a guess from the first
		// 1024 bytes; a body that is UTF-8 all through is not windows-1252
		// (ASCII reads the same either way).
		if certain || name != "windows-1252" || !utf8.Valid(body) {
			enc = e
		}
	} else {
		if _, params, err := mime.ParseMediaType(contentType); err == nil && params["charset"] != "" {
			enc, _ = charset.Lookup(params["charset"])
		}
		if enc == nil && !utf8.Valid(body) {
			enc = charmap.Windows1252
		}
	}
	if enc != nil && enc != unicode.UTF8 && enc != encoding.Nop {
		if out, err := enc.NewDecoder().Bytes(body); err == nil {
			body = out
		}
	}
	return bytes.TrimPrefix(body, []byte("\uFEFF"))
}

// hashText is tidemark.HashEvidence of text, without a copy of the whole
// text ([]byte(text) would be one as large as the page's text).
func hashText(text string) string {
	h := sha256.New()
	var chunk [32 << 10]byte
	for len(text) > 0 {
		n := copy(chunk[:], text)
		h.Write(chunk[:n])
		text = text[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Extract returns the title and the canonical readable text of a page. A
// non-empty selector narrows the text to its matches (ErrNoMatch when it
// matches nothing); ignore removes volatile parts first. text/plain bodies
// are taken as they are. A page with more than maxNodes HTML nodes
// (maxNodes > 0) is ErrTooManyNodes, found by a streaming count before
// the document tree is built.
func Extract(body []byte, contentType, selector, ignore string, maxNodes int) (title, text string, err error) {
	if contentType == "" {
		contentType = http.DetectContentType(body)
	}
	media, _, _ := strings.Cut(contentType, ";")
	media = strings.ToLower(strings.TrimSpace(media))
	switch media {
	case "text/html", "application/xhtml+xml":
		body = decode(body, contentType, true)
	case "text/plain":
		if selector != "" {
			return "", "", fmt.Errorf("page: a selector needs HTML, got %s", media)
		}
		text = canon.Text(string(decode(body, contentType, false)))
		if text == "" {
			return "", "", ErrNoText
		}
		return "", text, nil
	default:
		return "", "", fmt.Errorf("page: content type %s is not a page", media)
	}
	if maxNodes > 0 {
		if err := checkNodes(body, maxNodes); err != nil {
			return "", "", err
		}
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return "", "", fmt.Errorf("page: %w", err)
	}
	title = canon.Line(doc.Find("title").First().Text())
	doc.Find("script, style, noscript, template, svg, iframe, object, head").Remove()
	if ignore != "" {
		s, err := compile(doc, ignore)
		if err != nil {
			return "", "", err
		}
		s.Remove()
	}
	root := doc.Find("body")
	if root.Length() == 0 {
		root = doc.Selection
	}
	if selector != "" {
		if root, err = compile(doc, selector); err != nil {
			return "", "", err
		}
		if root.Length() == 0 {
			return title, "", ErrNoMatch
		}
	}
	var parts []string
	root.Each(func(_ int, s *goquery.Selection) {
		for _, n := range s.Nodes {
			parts = append(parts, readable(n, len(body)))
		}
	})
	text = canon.Text(strings.Join(parts, "\n\n"))
	if text == "" {
		return title, "", ErrNoText
	}
	return title, text, nil
}

// checkNodes counts a page's nodes with the tokenizer, which holds one
// token at a time, and refuses more than maxNodes: the tree the parser
// would build is what costs memory. The count is of the tokens that
// become nodes (start tags, text runs, comments); the few the parser adds
// (implied <html>, <tbody>) are not counted.
func checkNodes(body []byte, maxNodes int) error {
	z := html.NewTokenizer(bytes.NewReader(body))
	n := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return nil
		case html.StartTagToken, html.SelfClosingTagToken, html.TextToken, html.CommentToken:
			if n++; n > maxNodes {
				return fmt.Errorf("%w: more than %d HTML nodes (max_nodes)", ErrTooManyNodes, maxNodes)
			}
		}
	}
}

// compile finds a CSS selector; a selector that does not compile is an
// error (goquery alone would quietly match nothing).
func compile(doc *goquery.Document, sel string) (*goquery.Selection, error) {
	m, err := cascadia.Compile(sel)
	if err != nil {
		return nil, fmt.Errorf("page: bad CSS selector %q: %w", sel, err)
	}
	return doc.FindMatcher(m), nil
}

// CheckSelector reports whether sel is a valid CSS selector.
func CheckSelector(sel string) error {
	_, err := cascadia.Compile(sel)
	return err
}

// block elements start and end a line of their own.
var block = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "br": true, "dd": true, "details": true,
	"div": true, "dl": true, "dt": true, "fieldset": true, "figcaption": true, "figure": true, "footer": true,
	"form": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "header": true,
	"hr": true, "li": true, "main": true, "nav": true, "ol": true, "p": true, "pre": true, "section": true,
	"summary": true, "table": true, "tr": true, "ul": true, "body": true, "html": true, "title": true,
}

// readable renders a node's text: whitespace within a line collapsed,
// block elements on lines of their own, table cells separated by tabs,
// <pre> kept as written. It walks with an explicit stack, so no document
// depth can exhaust the goroutine's stack.
//
// sizeHint (the body's size) is the text's capacity, taken at once: the
// text is never longer than the body, and a builder grown by doubling
// would hold twice its size while it copies.
func readable(root *html.Node, sizeHint int) string {
	var b strings.Builder
	b.Grow(sizeHint)
	type frame struct {
		n     *html.Node
		close bool
		pre   bool
	}
	stack := []frame{{n: root}}
	space := false
	newline := func() {
		if s := b.String(); s != "" && s[len(s)-1] != '\n' {
			b.WriteByte('\n')
		}
		space = false
	}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := f.n
		if f.close {
			if block[n.Data] {
				newline()
			}
			continue
		}
		switch n.Type {
		case html.TextNode:
			if f.pre {
				b.WriteString(n.Data)
				continue
			}
			if startsWithSpace(n.Data) {
				space = true
			}
			for w := range strings.FieldsSeq(n.Data) {
				if space && !atLineStart(&b) {
					b.WriteByte(' ')
				}
				b.WriteString(w)
				space = true
			}
			space = strings.TrimSpace(n.Data) == "" && space || n.Data != "" && isSpaceByte(n.Data[len(n.Data)-1])
			continue
		case html.ElementNode:
			switch n.Data {
			case "td", "th":
				b.WriteByte('\t')
			case "img":
				for _, a := range n.Attr {
					if a.Key == "alt" && strings.TrimSpace(a.Val) != "" {
						b.WriteString("[" + strings.Join(strings.Fields(a.Val), " ") + "]")
					}
				}
			}
			if block[n.Data] {
				newline()
			}
		case html.CommentNode, html.DoctypeNode:
			continue
		}
		pre := f.pre || (n.Type == html.ElementNode && n.Data == "pre")
		stack = append(stack, frame{n: n, close: true})
		for c := n.LastChild; c != nil; c = c.PrevSibling {
			stack = append(stack, frame{n: c, pre: pre})
		}
	}
	return b.String()
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' }

func startsWithSpace(s string) bool { return s != "" && isSpaceByte(s[0]) }

func atLineStart(b *strings.Builder) bool {
	s := b.String()
	return s == "" || s[len(s)-1] == '\n' || s[len(s)-1] == '\t'
}
