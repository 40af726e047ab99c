// Package canon canonicalizes evidence before it is hashed, so the same
// upstream content always freezes to the same bytes and the same SHA-256:
// text has one line ending, no trailing whitespace, no surrounding blank
// lines, valid UTF-8 in NFC; JSON has sorted keys, no insignificant
// whitespace and its numbers exactly as written; volatile parts a kind
// names (Drop) are removed before either.
//
// Every function here is total: any input yields canonical output or an
// error, never a panic (see the fuzz tests).
package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Text canonicalizes text: invalid UTF-8 becomes U+FFFD, a byte-order mark
// and NUL bytes are dropped, CRLF and CR become LF, trailing whitespace is
// trimmed from every line, runs of more than one blank line become one,
// leading and trailing blank lines are dropped, and the result is in
// Unicode NFC. The empty string stays empty; anything else ends in one LF.
func Text(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.TrimPrefix(s, "\uFEFF")
	s = strings.ReplaceAll(s, "\x00", "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = norm.NFC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	blank := 0
	started := false
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRightFunc(line, isSpace)
		if line == "" {
			if started {
				blank++
			}
			continue
		}
		if started {
			b.WriteByte('\n')
			if blank > 0 {
				b.WriteByte('\n')
			}
		}
		blank = 0
		started = true
		b.WriteString(line)
	}
	if !started {
		return ""
	}
	b.WriteByte('\n')
	return b.String()
}

// Line canonicalizes a one-line field (a title, a name): whitespace runs,
// line breaks included, become one space, and the ends are trimmed.
func Line(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	return norm.NFC.String(strings.Join(strings.Fields(s), " "))
}

func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\v', '\f', '\u00a0', '\u200b', '\u3000', '\u2000', '\u2001', '\u2002', '\u2003', '\u2009', '\u202f':
		return true
	}
	return false
}

// MaxDepth bounds the nesting JSON may have; deeper documents are refused
// rather than risk the stack.
const MaxDepth = 200

// ErrTooDeep: the JSON nests deeper than MaxDepth.
var ErrTooDeep = errors.New("canon: JSON nests too deep")

// JSON canonicalizes a JSON document: keys sorted, no insignificant
// whitespace, no HTML escaping, numbers as written, strings as in the
// document. Trailing data after the value is an error.
func JSON(b []byte) ([]byte, error) {
	v, err := Decode(b)
	if err != nil {
		return nil, err
	}
	return Value(v)
}

// utf8BOM is the UTF-8 byte-order mark.
var utf8BOM = []byte("\xef\xbb\xbf")

// Decode parses one JSON value with numbers kept as json.Number. A leading
// UTF-8 byte-order mark is ignored, as RFC 8259 allows, so a document
// with one decodes (and canonicalizes) as it does without.
func Decode(b []byte) (any, error) {
	b = bytes.TrimPrefix(b, utf8BOM)
	if err := checkDepth(b); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("canon: data after the JSON value")
	}
	return v, nil
}

// checkDepth refuses documents nested deeper than MaxDepth before they are
// decoded (a cheap scan that skips strings).
func checkDepth(b []byte) error {
	depth, inStr, esc := 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
			if depth > MaxDepth {
				return ErrTooDeep
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// Value encodes a decoded JSON value (from Decode, encoding/json or gojq)
// canonically. Map keys are sorted by encoding/json; HTML is not escaped.
func Value(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Drop removes the volatile parts named by paths from a decoded JSON value
// and returns it. A path is a dot-separated list of object keys
// ("meta.fetched_at"); "*" matches every key or array element at its
// level. Paths that lead nowhere are ignored (DropMatched tells them).
func Drop(v any, paths []string) any {
	v, _ = DropMatched(v, paths)
	return v
}

// DropMatched is Drop, and says for each path whether it removed anything
// from v.
func DropMatched(v any, paths []string) (any, []bool) {
	matched := make([]bool, len(paths))
	for i, p := range paths {
		p = strings.TrimPrefix(strings.TrimSpace(p), ".")
		if p == "" {
			continue
		}
		v, matched[i] = drop(v, strings.Split(p, "."))
	}
	return v, matched
}

// CheckPath refuses a Drop path that can name nothing: an empty one, or
// one with an empty segment ("stats..v", "a.").
func CheckPath(p string) error {
	q := strings.TrimPrefix(strings.TrimSpace(p), ".")
	if q == "" {
		return errors.New("the path is empty")
	}
	for i, seg := range strings.Split(q, ".") {
		if seg == "" {
			return fmt.Errorf("segment %d is empty (keys are separated by single dots: stats.*.hits)", i+1)
		}
	}
	return nil
}

func drop(v any, path []string) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			if path[0] == "*" {
				return map[string]any{}, len(x) > 0
			}
			_, ok := x[path[0]]
			delete(x, path[0])
			return x, ok
		}
		matched := false
		if path[0] == "*" {
			for k, e := range x {
				var m bool
				x[k], m = drop(e, path[1:])
				matched = matched || m
			}
		} else if e, ok := x[path[0]]; ok {
			x[path[0]], matched = drop(e, path[1:])
		}
		return x, matched
	case []any:
		matched := false
		if path[0] == "*" {
			if len(path) == 1 {
				return []any{}, len(x) > 0
			}
			for i, e := range x {
				var m bool
				x[i], m = drop(e, path[1:])
				matched = matched || m
			}
		}
		return x, matched
	}
	return v, false
}

// SplitList splits a comma-separated config value into trimmed, non-empty,
// sorted, unique parts.
func SplitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
