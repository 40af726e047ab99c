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
	"sort"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/httpx"
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

// MaxRemembered bounds the shared identities a cursor remembers (Keys).
// Past it, the cursor remembers only that every identity is to be taken
// as shared (RememberAll): the list stays small, and no event can ever
// take in another item's evidence.
const MaxRemembered = 10000

// RememberAll is the remembered list that takes every identity, at both
// levels, as shared: every item is keyed by its whole evidence.
const RememberAll = "*"

// remembered is how a cursor names a shared identity: 16 hex digits of
// its SHA-256, so a list of them stays small whatever the identities.
func remembered(id string) string { return tidemark.HashEvidence([]byte(id))[:16] }

// Keys chooses item keys, in an order-independent way, so an unchanged
// item keeps its key across fetches and an edited one is a new revision
// of the same event:
//
//   - candidates whose evidence is identical are one item (a repeat);
//   - an identity unique in the document, and never shared before, is
//     the key itself (the common case: an edit is a revision);
//   - candidates sharing an identity are keyed by the identity and their
//     Stable hash ("ID #hash"), or, where even that is shared, a hash of
//     their whole evidence. None is dropped; an edit to the fields Stable
//     covers reads as a new event.
//
// An identity once shared stays shared: shared is what the source's
// cursor remembers (from Keys' second result of its last settled run),
// and the result adds what this document shares. Otherwise a key would
// depend on the other items of the document: when a feed that gave one
// GUID to two entries shrank back to one, that entry would take the bare
// GUID, the key of the event another entry had under it, and one event
// would hold two upstream items (the first would become the second).
// Remembered, the entry keeps its "ID #hash" key and its own event.
//
// Every key goes through ItemKey. Keys reuses cands' storage.
func Keys(cands []Candidate, shared []string) ([]tidemark.Item, []string) {
	all := false
	known := make(map[string]bool, len(shared))
	for _, s := range shared {
		all = all || s == RememberAll
		known[s] = true
	}
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
	isShared := func(id string, n int) bool { return all || n > 1 || known[remembered(id)] }
	stable := make(map[string]int)
	for _, c := range kept {
		if isShared(c.ID, ids[c.ID]) {
			stable[c.ID+" #"+c.Stable]++
		}
	}
	grown := false
	remember := func(id string) {
		if m := remembered(id); !known[m] {
			known[m], grown = true, true
		}
	}
	items := make([]tidemark.Item, 0, len(kept))
	for _, c := range kept {
		key := c.ID
		if ids[c.ID] > 1 {
			remember(c.ID)
		}
		if isShared(c.ID, ids[c.ID]) {
			key = c.ID + " #" + c.Stable
			if stable[key] > 1 {
				remember(key)
			}
			if isShared(key, stable[key]) {
				key = c.ID + " #" + c.Item.EvidenceHash()[:16]
			}
		}
		c.Item.Key = ItemKey(key)
		items = append(items, c.Item)
	}
	if all || !grown {
		return items, shared
	}
	if len(known) > MaxRemembered {
		return items, []string{RememberAll}
	}
	out := make([]string, 0, len(known))
	for m := range known {
		out = append(out, m)
	}
	sort.Strings(out)
	return items, out
}

// ItemsCursor is the cursor of the kinds that read many items from one
// HTTP answer (feed, json): the validators of the last settled fetch, and
// the identities their answers ever gave to differing items (Keys), so
// both advance only when a run settles.
type ItemsCursor struct {
	httpx.Validators
	Shared []string `json:"shared,omitempty"`
}

// DecodeItemsCursor reads a stored cursor; an empty or unreadable one is
// the zero cursor (an unconditional fetch, nothing remembered). A cursor
// an earlier version stored (validators alone) reads as it was.
func DecodeItemsCursor(cursor string) ItemsCursor {
	var c ItemsCursor
	if cursor != "" {
		_ = json.Unmarshal([]byte(cursor), &c)
	}
	return c
}

// Encode returns the cursor's stored form ("" when it holds nothing).
func (c ItemsCursor) Encode() string {
	if c.Validators == (httpx.Validators{}) && len(c.Shared) == 0 {
		return ""
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// CheckItemsCursor reads to (a skip target, or source test's cursor,
// named by field) strictly as an ItemsCursor of kind: one object, the
// validators, and shared identities as Keys remembers them.
func CheckItemsCursor(field, kind, to string) error {
	var c ItemsCursor
	if err := CheckCursorOf(field, kind, to, &c); err != nil {
		return err
	}
	if len(c.Shared) > MaxRemembered {
		return tidemark.Invalidf(field, to, "not a %s cursor: more than %d shared identities", kind, MaxRemembered)
	}
	for _, s := range c.Shared {
		if s != RememberAll && (len(s) != 16 || strings.Trim(s, "0123456789abcdef") != "") {
			return tidemark.Invalidf(field, to, "not a %s cursor: shared identity %q is neither 16 lower-case hex digits nor %q", kind, s, RememberAll)
		}
	}
	return nil
}
