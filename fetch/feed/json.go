package feed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// isJSONFeedVersion reports whether a JSON document's "version" names a
// JSON Feed version. The spec makes it the URL of the version
// (https://jsonfeed.org/version/1, .../1.1; also over http). The bare
// numbers some feeds carry ("1", "1.0", "1.1") count only in a document
// served as a JSON Feed (application/feed+json): any JSON API may have a
// "version" like that next to an "items" array.
func isJSONFeedVersion(version string, servedAsFeed bool) bool {
	v := strings.TrimSpace(version)
	if rest, ok := strings.CutPrefix(v, "https://jsonfeed.org/version/"); ok && rest != "" {
		return true
	}
	if rest, ok := strings.CutPrefix(v, "http://jsonfeed.org/version/"); ok && rest != "" {
		return true
	}
	switch v {
	case "1", "1.0", "1.1":
		return servedAsFeed
	}
	return false
}

// scanJSON reads a JSON Feed as a token stream, before the feed parser
// builds anything, and returns how many items it has; like scanXML it
// refuses more than maxItems items (maxItems > 0) with their full count,
// holding one item at a time. A document that is not a JSON object with a
// JSON Feed version (isJSONFeedVersion) is ErrNotAFeed; one with such a
// version but without what the spec requires besides (a string "title",
// an "items" array) is malformed, with what it lacks.
func scanJSON(body []byte, servedAsFeed bool, maxItems int) (entries int, err error) {
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return 0, ErrNotAFeed
	}
	var version string
	hasTitle, hasItems, itemsNotArray := false, false, false
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
		case "title":
			var title any
			if err := d.Decode(&title); err != nil {
				return 0, fmt.Errorf("feed: malformed JSON: %w", err)
			}
			_, hasTitle = title.(string)
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
	if !isJSONFeedVersion(version, servedAsFeed) {
		return 0, ErrNotAFeed
	}
	switch {
	case itemsNotArray:
		return 0, fmt.Errorf("feed: JSON Feed items is not an array")
	case !hasItems:
		return 0, fmt.Errorf("feed: JSON Feed has no items array (the spec requires one)")
	case !hasTitle:
		return 0, fmt.Errorf("feed: JSON Feed has no title (the spec requires a string title)")
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
