package content

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Block is one block of rich text, in the style of Portable Text:
//
//	{"_type":"block","children":[{"_type":"span","text":"…"}]}
//
// Other keys (_key, style, markDefs, marks) are allowed and kept in stored
// values; Block carries only what flattening needs.
type Block struct {
	Type     string `json:"_type"`
	Children []Span `json:"children"`
}

// Span is a run of text inside a block.
type Span struct {
	Type string `json:"_type"`
	Text string `json:"text"`
}

// ValueError says why a value is not valid for a type, or why a rule
// refused it. The caller adds the document and field (see Invalid).
type ValueError struct {
	Type   FieldType
	Value  string
	Reason string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("%s for %s: %s", e.Value, e.Type, e.Reason)
}

func valueErr(t FieldType, v json.RawMessage, format string, args ...any) *ValueError {
	return &ValueError{Type: t, Value: ValueText(v), Reason: fmt.Sprintf(format, args...)}
}

// ValueText is a value as its JSON reads to people, for errors and a
// failed migration's failed_value: compact, without the HTML-safe escapes
// Go's encoder writes (\u003c for "<", which the console and the API would
// escape again), and cut to 120 bytes between two characters. A value that
// is not JSON (already cut) is shown as it is.
func ValueText(v json.RawMessage) string {
	var x any
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if d.Decode(&x) == nil {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		if e.Encode(x) == nil {
			return shorten(strings.TrimSuffix(b.String(), "\n"))
		}
	}
	return shorten(string(v))
}

func shorten(s string) string {
	if len(s) <= 120 {
		return s
	}
	n := 120
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // never cut a character in two
	}
	return s[:n] + "…"
}

// IsNull reports whether v is absent or JSON null.
func IsNull(v json.RawMessage) bool {
	return len(bytes.TrimSpace(v)) == 0 || string(bytes.TrimSpace(v)) == "null"
}

// Normalize checks that v is a valid value of type t and returns its
// canonical form (compact JSON; numbers as Go formats a float64; datetimes
// as RFC 3339 with their own offset). Null is valid for every type.
func Normalize(t FieldType, v json.RawMessage) (json.RawMessage, error) {
	if IsNull(v) {
		return json.RawMessage("null"), nil
	}
	if len(v) > MaxValueBytes {
		return nil, valueErr(t, v[:120], "value is %d bytes, at most %d", len(v), MaxValueBytes)
	}
	switch t {
	case Text:
		s, err := asString(t, v)
		if err != nil {
			return nil, err
		}
		return marshal(s), nil
	case Number:
		f, err := asNumber(t, v)
		if err != nil {
			return nil, err
		}
		return marshal(f), nil
	case Boolean:
		b, err := asBool(t, v)
		if err != nil {
			return nil, err
		}
		return marshal(b), nil
	case RichText:
		if _, err := asRichText(t, v); err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, valueErr(t, v, "not JSON: %v", err)
		}
		return buf.Bytes(), nil
	case DateTime:
		s, err := asString(t, v)
		if err != nil {
			return nil, err
		}
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, valueErr(t, v, "not an RFC 3339 date-time (2026-01-02T15:04:05Z)")
		}
		return marshal(ts.Format(time.RFC3339Nano)), nil
	}
	return nil, valueErr(t, v, "unknown type")
}

func marshal(x any) json.RawMessage {
	b, err := json.Marshal(x)
	if err != nil {
		panic("content: marshal " + fmt.Sprint(x) + ": " + err.Error())
	}
	return b
}

func asString(t FieldType, v json.RawMessage) (string, error) {
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", valueErr(t, v, "not a JSON string")
	}
	return s, nil
}

func asNumber(t FieldType, v json.RawMessage) (float64, error) {
	var n json.Number
	if len(v) == 0 || !(v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) || json.Unmarshal(v, &n) != nil {
		return 0, valueErr(t, v, "not a JSON number")
	}
	// A number the field would not keep as written is refused, as
	// text→number refuses it (parseDecimal): never rounded silently.
	f, err := parseDecimal(string(n))
	if err != nil {
		return 0, valueErr(t, v, "%s %v", n, err)
	}
	return f, nil
}

func asBool(t FieldType, v json.RawMessage) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, valueErr(t, v, "not a JSON boolean")
}

func asRichText(t FieldType, v json.RawMessage) ([]Block, error) {
	if len(v) == 0 || v[0] != '[' {
		return nil, valueErr(t, v, `not a block array ([{"_type":"block","children":[{"_type":"span","text":"…"}]}])`)
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil {
		return nil, valueErr(t, v, "not a block array: %v", err)
	}
	blocks := make([]Block, 0, len(raw))
	for i, rb := range raw {
		var b Block
		if err := json.Unmarshal(rb["_type"], &b.Type); err != nil || b.Type != "block" {
			return nil, valueErr(t, v, `block %d: _type must be "block"`, i)
		}
		var children []map[string]json.RawMessage
		if err := json.Unmarshal(rb["children"], &children); err != nil || rb["children"] == nil {
			return nil, valueErr(t, v, "block %d: children must be an array of spans", i)
		}
		for j, c := range children {
			var sp Span
			if err := json.Unmarshal(c["_type"], &sp.Type); err != nil || sp.Type != "span" {
				return nil, valueErr(t, v, `block %d, child %d: _type must be "span"`, i, j)
			}
			if err := json.Unmarshal(c["text"], &sp.Text); err != nil || c["text"] == nil || c["text"][0] != '"' {
				return nil, valueErr(t, v, "block %d, child %d: text must be a string", i, j)
			}
			b.Children = append(b.Children, sp)
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// Rule converts a value of one type to another. Rules are honest, and
// deliberately not idempotent where the domain is not: a rule refuses a
// value that is not of its source type, so running it on its own output
// fails instead of silently double-converting.
type Rule struct {
	From, To FieldType
	convert  func(v json.RawMessage) (json.RawMessage, error)
}

// Name is "from→to".
func (r Rule) Name() string { return string(r.From) + "→" + string(r.To) }

// Apply converts v. Null converts to null without calling the rule.
func (r Rule) Apply(v json.RawMessage) (json.RawMessage, error) {
	if IsNull(v) {
		return json.RawMessage("null"), nil
	}
	out, err := r.convert(v)
	if err != nil {
		return nil, r.Refuse(v, err)
	}
	// The output is a value a write would accept, or the conversion fails
	// as any refused one does (wrapping text can grow it several times).
	if len(out) > MaxValueBytes {
		return nil, r.Refuse(v, fmt.Errorf("the converted value is %d bytes, at most %d", len(out), MaxValueBytes))
	}
	return out, nil
}

// Refuse is the error of converting v by r, refused for reason: by the
// rule itself, or by a store that cannot keep its output (a converted
// document over MaxDocumentBytes).
func (r Rule) Refuse(v json.RawMessage, reason error) *RuleError {
	return &RuleError{Rule: r.Name(), Value: ValueText(v), Err: reason}
}

// RuleError is a conversion a rule refused.
type RuleError struct {
	Rule  string
	Value string
	Err   error
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("rule %s refused %s: %v", e.Rule, e.Value, e.Err)
}
func (e *RuleError) Unwrap() error { return e.Err }

var rules = map[[2]FieldType]Rule{}

func addRule(from, to FieldType, f func(v json.RawMessage) (json.RawMessage, error)) {
	rules[[2]FieldType{from, to}] = Rule{From: from, To: to, convert: f}
}

// RuleFor returns the rule converting from into to; ok is false for an
// unsupported pair, which a migration refuses before it starts.
func RuleFor(from, to FieldType) (Rule, bool) {
	r, ok := rules[[2]FieldType{from, to}]
	return r, ok
}

// Rules lists every supported conversion in a stable order.
func Rules() []Rule {
	var out []Rule
	for _, from := range FieldTypes {
		for _, to := range FieldTypes {
			if r, ok := RuleFor(from, to); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// decimalNumber is what text→number reads: a decimal number, with an
// optional sign, point and exponent; not Go's literals (1_000, 0x10) nor
// Infinity or NaN.
var decimalNumber = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// parseDecimal reads s as a decimal number that a number field keeps as it
// is: one whose value the float64 it parses to writes back (its shortest
// form), so nothing is lost silently: not a value out of range, nor one
// so small that it would become 0, nor digits beyond what a float64 holds
// (integers above 2^53, about 16 significant digits). Trailing zeros and
// an exponent are fine: 1.50 is 1.5.
func parseDecimal(s string) (float64, error) {
	if !decimalNumber.MatchString(s) {
		return 0, errors.New("is not a decimal number (digits, with an optional sign, point and exponent)")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, errors.New("is out of the range of a number (about ±1.8e308)")
	}
	back := strconv.FormatFloat(f, 'e', -1, 64)
	if decimalValue(s) != decimalValue(back) {
		if f == 0 {
			return 0, errors.New("is too small for a number: it would become 0")
		}
		return 0, fmt.Errorf("has more significant digits than a number keeps: it would become %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	return f, nil
}

// decimalValue is a decimal number's value in one form: its sign, its
// significant digits and the power of ten of the last, "0" for zero. s
// matches decimalNumber.
func decimalValue(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(s[i+1:])
		if err != nil { // beyond any int: such a number is 0 or out of range anyway
			e = math.MaxInt32
			if strings.HasPrefix(s[i+1:], "-") {
				e = math.MinInt32
			}
		}
		exp = e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	exp -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	if trimmed == "" {
		return "0"
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return fmt.Sprintf("%s%se%d", sign, trimmed, exp)
}

// paragraphSep separates blocks when rich text is flattened, and splits
// text into blocks when it is wrapped.
const paragraphSep = "\n\n"

func init() {
	// text→number parses a decimal number; fails on anything else
	addRule(Text, Number, func(v json.RawMessage) (json.RawMessage, error) {
		s, err := asString(Text, v)
		if err != nil {
			return nil, err
		}
		f, err := parseDecimal(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%q %w", s, err)
		}
		return marshal(f), nil
	})
	// number→text writes the number in decimal
	addRule(Number, Text, func(v json.RawMessage) (json.RawMessage, error) {
		f, err := asNumber(Number, v)
		if err != nil {
			return nil, err
		}
		return marshal(strconv.FormatFloat(f, 'f', -1, 64)), nil
	})
	// text→richtext wraps each paragraph (split on a blank line) in a block with one span
	addRule(Text, RichText, func(v json.RawMessage) (json.RawMessage, error) {
		s, err := asString(Text, v)
		if err != nil {
			return nil, err
		}
		return marshal(Wrap(s)), nil
	})
	// richtext→text flattens: a block's spans joined, blocks separated by a blank line
	addRule(RichText, Text, func(v json.RawMessage) (json.RawMessage, error) {
		blocks, err := asRichText(RichText, v)
		if err != nil {
			return nil, err
		}
		return marshal(Flatten(blocks)), nil
	})
	// boolean→number: false→0, true→1
	addRule(Boolean, Number, func(v json.RawMessage) (json.RawMessage, error) {
		b, err := asBool(Boolean, v)
		if err != nil {
			return nil, err
		}
		if b {
			return json.RawMessage("1"), nil
		}
		return json.RawMessage("0"), nil
	})
	// number→boolean: 0→false, 1→true; fails on any other number
	addRule(Number, Boolean, func(v json.RawMessage) (json.RawMessage, error) {
		f, err := asNumber(Number, v)
		if err != nil {
			return nil, err
		}
		switch f {
		case 0:
			return json.RawMessage("false"), nil
		case 1:
			return json.RawMessage("true"), nil
		}
		return nil, fmt.Errorf("only 0 and 1 are booleans, not %s", string(v))
	})
	// text→boolean: "true"→true, "false"→false; fails on anything else
	addRule(Text, Boolean, func(v json.RawMessage) (json.RawMessage, error) {
		s, err := asString(Text, v)
		if err != nil {
			return nil, err
		}
		switch s {
		case "true":
			return json.RawMessage("true"), nil
		case "false":
			return json.RawMessage("false"), nil
		}
		return nil, fmt.Errorf(`%q is neither "true" nor "false"`, s)
	})
	// boolean→text: true→"true", false→"false"
	addRule(Boolean, Text, func(v json.RawMessage) (json.RawMessage, error) {
		b, err := asBool(Boolean, v)
		if err != nil {
			return nil, err
		}
		return marshal(strconv.FormatBool(b)), nil
	})
	// text→datetime parses RFC 3339; fails on anything else
	addRule(Text, DateTime, func(v json.RawMessage) (json.RawMessage, error) {
		s, err := asString(Text, v)
		if err != nil {
			return nil, err
		}
		ts, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%q is not an RFC 3339 date-time (2026-01-02T15:04:05Z)", s)
		}
		return marshal(ts.Format(time.RFC3339Nano)), nil
	})
	// datetime→text writes the RFC 3339 text
	addRule(DateTime, Text, func(v json.RawMessage) (json.RawMessage, error) {
		s, err := asString(DateTime, v)
		if err != nil {
			return nil, err
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fmt.Errorf("%q is not an RFC 3339 date-time", s)
		}
		return marshal(s), nil
	})
}

// Wrap turns text into rich text: one block per paragraph (paragraphs are
// separated by a blank line), each with one span. Empty text is no blocks.
func Wrap(s string) []Block {
	blocks := []Block{}
	if s == "" {
		return blocks
	}
	for _, p := range strings.Split(s, paragraphSep) {
		blocks = append(blocks, Block{Type: "block", Children: []Span{{Type: "span", Text: p}}})
	}
	return blocks
}

// Flatten turns rich text into text: each block's spans joined, blocks
// separated by a blank line. Flatten(Wrap(s)) == s.
func Flatten(blocks []Block) string {
	parts := make([]string, len(blocks))
	for i, b := range blocks {
		var sb strings.Builder
		for _, sp := range b.Children {
			sb.WriteString(sp.Text)
		}
		parts[i] = sb.String()
	}
	return strings.Join(parts, paragraphSep)
}

// ParseRichText decodes a valid rich-text value.
func ParseRichText(v json.RawMessage) ([]Block, error) {
	if IsNull(v) {
		return nil, nil
	}
	return asRichText(RichText, v)
}
