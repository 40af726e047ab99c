package feed

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// prolog matches an XML declaration's encoding pseudo-attribute. The
// declaration is ASCII in every ASCII-compatible encoding, so it is found
// in the raw bytes.
var prolog = regexp.MustCompile(`^(\xEF\xBB\xBF)?[ \t\r\n]*<\?xml[^>]*?[ \t\r\n]encoding[ \t\r\n]*=[ \t\r\n]*["']([A-Za-z0-9._:-]*)["']`)

// ErrCharset: the document names a character encoding tidemark does not
// know.
var ErrCharset = errors.New("feed: unknown character encoding")

// toUTF8 returns a feed document as UTF-8 whose XML declaration, if any,
// says so, with the characters XML 1.0 forbids removed: the one place
// where bytes become text before the parsers see them.
//
// The encoding is, in order: a UTF-16 byte-order mark; the charset of the
// Content-Type header; the XML declaration's encoding; UTF-8. A header
// saying UTF-8 over a body that is not, with a declaration naming another
// encoding, is a server default and yields to the declaration. Labels are
// the WHATWG ones browsers use (ISO-8859-1 reads as windows-1252), except
// that a UTF-8 body labelled US-ASCII is UTF-8; an unknown label is passed
// over, and is ErrCharset only when the body is not UTF-8 either. A body
// that claims nothing and is not UTF-8 is read as windows-1252 when no
// byte of it forms a multi-byte UTF-8 sequence (a legacy feed that never
// said so); otherwise its invalid bytes become U+FFFD.
func toUTF8(body []byte, contentType string) ([]byte, error) {
	var header string
	if contentType != "" {
		if _, params, err := mime.ParseMediaType(contentType); err == nil {
			header = strings.TrimSpace(params["charset"])
		}
	}
	var declared string
	if m := prolog.FindSubmatch(body[:min(len(body), 512)]); m != nil {
		declared = string(m[2])
	}
	var enc encoding.Encoding
	unknown := ""
	if bytes.HasPrefix(body, []byte{0xFE, 0xFF}) || bytes.HasPrefix(body, []byte{0xFF, 0xFE}) {
		enc = unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM)
	} else {
		valid := utf8.Valid(body)
		labels := []string{header, declared}
		if isUTF8(header) && !valid && declared != "" && !isUTF8(declared) {
			labels = labels[1:] // a server's default the body contradicts
		}
		for _, label := range labels {
			l := strings.ToLower(strings.TrimSpace(label))
			if l == "" {
				continue
			}
			if isUTF8(l) || valid && (l == "us-ascii" || l == "ascii") {
				break // ASCII is UTF-8's subset: a UTF-8 body labelled ASCII is UTF-8
			}
			if e, _ := charset.Lookup(l); e != nil {
				enc = e
				break
			}
			if unknown == "" {
				unknown = label
			}
		}
		if enc == nil && unknown != "" && !valid {
			return nil, fmt.Errorf("%w: %q", ErrCharset, unknown)
		}
	}
	switch {
	case enc != nil:
		out, err := enc.NewDecoder().Bytes(body)
		if err != nil {
			return nil, fmt.Errorf("feed: decoding the document: %w", err)
		}
		body = out
	case !utf8.Valid(body) && header == "" && declared == "" && !hasMultiByte(body):
		out, err := charmap.Windows1252.NewDecoder().Bytes(body)
		if err != nil {
			return nil, fmt.Errorf("feed: decoding the document: %w", err)
		}
		body = out
	case !utf8.Valid(body):
		body = bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	// The parsers would decode the body again by its declaration.
	if m := prolog.FindSubmatchIndex(body[:min(len(body), 512)]); m != nil && !isUTF8(string(body[m[4]:m[5]])) {
		fixed := make([]byte, 0, len(body))
		fixed = append(fixed, body[:m[4]]...)
		fixed = append(fixed, "UTF-8"...)
		body = append(fixed, body[m[5]:]...)
	}
	return stripForbidden(body), nil
}

func isUTF8(label string) bool {
	l := strings.ToLower(strings.TrimSpace(label))
	return l == "utf-8" || l == "utf8" || l == "unicode-1-1-utf-8"
}

// hasMultiByte reports whether any bytes of b form a multi-byte UTF-8
// sequence.
func hasMultiByte(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if n > 1 && r != utf8.RuneError {
			return true
		}
		b = b[n:]
	}
	return false
}

// stripForbidden removes the characters XML 1.0 forbids (the C0 controls
// other than tab, LF and CR, and U+FFFE, U+FFFF), which the XML decoder
// refuses wherever they stand: one stray control character would
// otherwise refuse a whole feed. Nothing else is touched; b is returned
// as it is when it has none.
func stripForbidden(b []byte) []byte {
	i := indexForbidden(b)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i >= 0 {
		out = append(out, b[:i]...)
		if b[i] == 0xEF {
			b = b[i+3:]
		} else {
			b = b[i+1:]
		}
		i = indexForbidden(b)
	}
	return append(out, b...)
}

func indexForbidden(b []byte) int {
	for i, c := range b {
		switch {
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r':
			return i
		case c == 0xEF && i+2 < len(b) && b[i+1] == 0xBF && (b[i+2] == 0xBE || b[i+2] == 0xBF):
			return i
		}
	}
	return -1
}

// stripForbiddenRefs removes the character references to characters XML
// 1.0 forbids (&#1;, &#x1B;, &#xFFFE;), which the XML decoder refuses like
// the characters themselves. Inside CDATA sections a reference is literal
// text and is kept. b is returned as it is when it has none.
func stripForbiddenRefs(b []byte) []byte {
	var out []byte
	last := 0 // b[last:i] is not yet copied to out
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '<' && bytes.HasPrefix(b[i:], []byte("<![CDATA[")):
			end := bytes.Index(b[i:], []byte("]]>"))
			if end < 0 {
				i = len(b)
			} else {
				i += end + 2
			}
		case b[i] == '&' && i+2 < len(b) && b[i+1] == '#':
			n := refLen(b[i:])
			if n == 0 {
				continue
			}
			if out == nil {
				out = make([]byte, 0, len(b))
			}
			out = append(out, b[last:i]...)
			last = i + n
			i += n - 1
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// refLen is the length of the forbidden character reference at the start
// of b, or 0 when b does not start with one.
func refLen(b []byte) int {
	i, base := 2, 10
	if i < len(b) && (b[i] == 'x' || b[i] == 'X') {
		i, base = 3, 16
	}
	v := 0
	start := i
	for ; i < len(b) && i < start+8; i++ {
		c := b[i]
		var d int
		switch {
		case '0' <= c && c <= '9':
			d = int(c - '0')
		case base == 16 && 'a' <= c && c <= 'f':
			d = int(c-'a') + 10
		case base == 16 && 'A' <= c && c <= 'F':
			d = int(c-'A') + 10
		case c == ';' && i > start:
			if forbiddenRune(v) {
				return i + 1
			}
			return 0
		default:
			return 0
		}
		v = v*base + d
	}
	return 0
}

// forbiddenRune: XML 1.0 does not allow the character.
func forbiddenRune(r int) bool {
	switch {
	case r == '\t', r == '\n', r == '\r':
		return false
	case r < 0x20, r == 0xFFFE, r == 0xFFFF, 0xD800 <= r && r <= 0xDFFF, r > 0x10FFFF:
		return true
	}
	return false
}
