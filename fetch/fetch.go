// Package fetch holds what the source kinds under it share beyond HTTP
// (which is fetch/httpx): reading the bounds a source's config sets,
// checking a skip target against a kind's cursor (CheckCursor), bounding
// item keys, and keying apart items a document gives one identity (Keys).
// Each kind lives in its own package (feed, page, jsonsrc, dir, git) and
// implements tidemark.Fetcher.
package fetch

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark"
)

// DefaultMaxItems is the default bound on the items of one document for
// the kinds that read many (feed, json): a larger answer is invalid
// rather than half-read.
const DefaultMaxItems = 20000

// IntConfig reads a positive integer from a source's config, or def when
// the key is unset. Anything else is an *tidemark.InvalidError.
func IntConfig(cfg map[string]string, key string, def int64) (int64, error) {
	v := strings.TrimSpace(cfg[key])
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, tidemark.Invalidf("config "+key, v, "want a positive integer")
	}
	return n, nil
}

// CheckCursor reads to, an operator's skip target for a kind whose cursor
// is a JSON object, strictly into v: one object, only the fields v has,
// each of its type, nothing after it. What the kind could not read back
// is an *tidemark.InvalidError naming --to, so it is never stored (a kind
// reads an unreadable cursor as none, and would silently start over).
func CheckCursor(kind, to string, v any) error {
	return CheckCursorOf("to", kind, to, v)
}

// CheckCursorOf is CheckCursor for a cursor given as the input field (a
// skip's "to", source test's "cursor"), which a refusal names.
func CheckCursorOf(field, kind, to string, v any) error {
	refuse := func(err error) error {
		return tidemark.Invalidf(field, to, "not a %s cursor (%v); a %s cursor is a JSON object like the one `source show` prints", kind, err, kind)
	}
	if !strings.HasPrefix(strings.TrimSpace(to), "{") {
		return refuse(errors.New("not a JSON object"))
	}
	dec := json.NewDecoder(strings.NewReader(to))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return refuse(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return refuse(errors.New("more after the object"))
	}
	return nil
}

// MaxKeyBytes bounds an item key; ItemKey hashes longer identities.
const MaxKeyBytes = 512

// ItemKey is the item key for an upstream identity: the identity itself,
// or "sha256:" and its hash when it is longer than MaxKeyBytes.
func ItemKey(id string) string {
	if len(id) > MaxKeyBytes {
		return "sha256:" + tidemark.HashEvidence([]byte(id))
	}
	return id
}

// Candidate is an item before its key is chosen.
type Candidate struct {
	Item tidemark.Item
	// ID is the upstream identity.
	ID string
	// Stable hashes the fields that tell apart candidates a careless
	// upstream gives one identity (a link, a title, a date).
	Stable string
}

// Keys chooses item keys, in an order-independent way, so an unchanged
// item keeps its key across fetches and an edited one is a new revision
// of the same event:
//
//   - candidates whose evidence is identical are one item (a repeat);
//   - an identity unique in the document is the key itself (the common
//     case: an edit is a revision);
//   - candidates sharing an identity are keyed by the identity and their
//     Stable hash ("ID #hash"), or, where even that is shared, a hash of
//     their whole evidence. None is dropped; an edit to the fields Stable
//     covers reads as a new event.
//
// Every key goes through ItemKey. Keys reuses cands' storage.
func Keys(cands []Candidate) []tidemark.Item {
	seen := make(map[string]bool, len(cands))
	ids := make(map[string]int, len(cands))
	kept := cands[:0]
	for _, c := range cands {
		h := c.Item.EvidenceHash()
		if seen[h] {
			continue
		}
		seen[h] = true
		ids[c.ID]++
		kept = append(kept, c)
	}
	stable := make(map[string]int)
	for _, c := range kept {
		if ids[c.ID] > 1 {
			stable[c.ID+" #"+c.Stable]++
		}
	}
	items := make([]tidemark.Item, 0, len(kept))
	for _, c := range kept {
		key := c.ID
		if ids[c.ID] > 1 {
			key = c.ID + " #" + c.Stable
			if stable[key] > 1 {
				key = c.ID + " #" + c.Item.EvidenceHash()[:16]
			}
		}
		c.Item.Key = ItemKey(key)
		items = append(items, c.Item)
	}
	return items
}
