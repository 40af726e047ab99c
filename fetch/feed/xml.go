package feed

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrTruncated: the XML document ends before its root element closes.
var ErrTruncated = errors.New("feed: document is truncated")

// ErrTooManyEntries: the document has more entries than max_items.
var ErrTooManyEntries = errors.New("feed: too many entries")

// scanXML reads an XML feed as a token stream, before the feed parser
// builds anything, and returns its root element's name and how many
// entries it has (RSS <item>s under the channel or the RDF root, Atom
// <entry>s under the feed).
//
// It checks the structure the feed parser does not: that parser is
// lenient and would read a truncated document as a shorter feed, which
// would silently hide the entries that did not arrive. HTML entities are
// allowed (feeds use them); the body is already UTF-8 (toUTF8).
//
// A document with more than maxItems entries (maxItems > 0) is refused
// here, with its full count, so memory is bounded by the limit and not by
// the document: the stream holds one token at a time.
func scanXML(body []byte, maxItems int) (root string, entries int, err error) {
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var path []string // the names of the open elements, up to depth 3
	depth := 0
	closed := false
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return root, entries, fmt.Errorf("feed: malformed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			if root == "" {
				root = name
			}
			if depth < 3 {
				path = append(path[:depth], name)
			}
			depth++
			if isEntry(path, depth, name) {
				entries++
			}
		case xml.EndElement:
			if depth > 0 {
				depth--
			}
			// Sloppy feeds leave inner elements open (<br>); what a
			// complete document always has is its root's end tag.
			if t.Name.Local == root {
				closed = true
			}
		}
	}
	if maxItems > 0 && entries > maxItems {
		return root, entries, tooMany(entries, maxItems)
	}
	if !closed {
		return root, entries, ErrTruncated
	}
	return root, entries, nil
}

// isEntry: the element just opened at depth is one of the feed's entries.
func isEntry(path []string, depth int, name string) bool {
	switch {
	case depth == 2 && name == "item": // RSS 1.0: rdf:RDF > item
		return strings.EqualFold(path[0], "RDF")
	case depth == 2 && name == "entry": // Atom: feed > entry
		return path[0] == "feed"
	case depth == 3 && name == "item": // RSS 0.9x, 2.0: rss > channel > item
		return path[1] == "channel"
	}
	return false
}

func tooMany(entries, maxItems int) error {
	return fmt.Errorf("%w: %d, more than max_items (%d)", ErrTooManyEntries, entries, maxItems)
}
