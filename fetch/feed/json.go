package feed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// isJSONFeedVersion reports whether a JSON document's "version" names a
// JSON Feed version: the spec's URL (https://jsonfeed.org/version/1,
// .../1.1; also over http), or the bare numbers feeds in the wild carry
// ("1", "1.0", "1.1"), which count only next to an "items" array, since
// any JSON object may have a "version".
func isJSONFeedVersion(version string, hasItems bool) bool {
	v := strings.TrimSpace(version)
	if rest, ok := strings.CutPrefix(v, "https://jsonfeed.org/version/"); ok && rest != "" {
		return true
	}
	if rest, ok := strings.CutPrefix(v, "http://jsonfeed.org/version/"); ok && rest != "" {
		return true
	}
	switch v {
	case "1", "1.0", "1.1":
		return hasItems
	}
	return false
}

// scanJSON reads a JSON Feed as a token stream, before the feed parser
// builds anything, and returns its version and how many items it has;
// like scanXML it refuses more than maxItems items (maxItems > 0) with
// their full count, holding one item at a time. A document that is not a
// JSON object with a JSON Feed version is ErrNotAFeed.
func scanJSON(body []byte, maxItems int) (entries int, err error) {
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return 0, ErrNotAFeed
	}
	var version string
	hasItems, itemsNotArray := false, false
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return 0, fmt.Errorf("feed: malformed JSON: %w", err)
		}
		key, _ := t.(string)
		switch key {
		case "version":
			if err := d.Decode(&version); err != nil {
				return 0, ErrNotAFeed
			}
		case "items":
			t, err := d.Token()
			if err != nil {
				return 0, fmt.Errorf("feed: malformed JSON: %w", err)
			}
			if t != json.Delim('[') {
				// Only wrong in a JSON Feed: any JSON object may have
				// "items", so the version decides once it is read.
				itemsNotArray = true
				if err := skipValue(d, t); err != nil {
					return 0, fmt.Errorf("feed: malformed JSON: %w", err)
				}
				continue
			}
			hasItems = true
			for d.More() {
				var skip json.RawMessage
				if err := d.Decode(&skip); err != nil {
					return 0, fmt.Errorf("feed: malformed JSON: %w", err)
				}
				entries++
			}
			if _, err := d.Token(); err != nil {
				return 0, fmt.Errorf("feed: malformed JSON: %w", err)
			}
		default:
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return 0, fmt.Errorf("feed: malformed JSON: %w", err)
			}
		}
	}
	if _, err := d.Token(); err != nil {
		return 0, fmt.Errorf("feed: malformed JSON: %w", err)
	}
	if !isJSONFeedVersion(version, hasItems) {
		return 0, ErrNotAFeed
	}
	if itemsNotArray {
		return 0, fmt.Errorf("feed: JSON Feed items is not an array")
	}
	if maxItems > 0 && entries > maxItems {
		return entries, tooMany(entries, maxItems)
	}
	return entries, nil
}

// skipValue consumes the rest of a JSON value whose first token was t.
func skipValue(d *json.Decoder, t json.Token) error {
	depth := 0
	if t == json.Delim('{') || t == json.Delim('[') {
		depth = 1
	}
	for depth > 0 {
		t, err := d.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}
