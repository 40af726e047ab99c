package feed

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
)

// ErrTruncated: the XML document ends before its root element closes.
var ErrTruncated = errors.New("feed: document is truncated")

// wellFormed checks an XML feed's structure: the feed parser is lenient
// and would read a truncated document as a shorter feed, which would
// silently hide the entries that did not arrive. HTML entities are allowed
// (feeds use them); the charset is not interpreted (only structure is
// checked here).
func wellFormed(body []byte) error {
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var root string
	closed := false
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("feed: malformed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = t.Name.Local
			}
		case xml.EndElement:
			// Sloppy feeds leave inner elements open (<br>); what a
			// complete document always has is its root's end tag.
			if t.Name.Local == root {
				closed = true
			}
		}
	}
	if !closed {
		return ErrTruncated
	}
	return nil
}
