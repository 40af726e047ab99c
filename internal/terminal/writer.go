// Package terminal is what tidemark's output goes through on its way to a
// terminal: a Writer that escapes the control characters text from
// upstream could carry, and progress displays drawn only when the output
// is a terminal, so scripts, logs and --json stay clean. It holds the
// command line's terminal dependencies (a progress bar, golang.org/x/term).
package terminal

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// Writer is the one place text output passes through on its way to a
// terminal: it escapes the control characters that text from upstream
// (titles, error messages, evidence, a server's answer) could carry, so an
// ESC or a C1 control is printed as \x1b or \u009b instead of driving the
// terminal. Newlines and tabs pass: they are the layout. JSON output and
// raw bytes asked for on purpose (evidence, an OPML export) go to the
// writer underneath (see Raw): JSON escapes its strings itself.
//
// Each Write is escaped on its own; the printers write a string whole, so
// a character's encoding is never split between two Writes.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer that escapes what it writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Raw returns the writer under w if w is a Writer, else w itself.
func Raw(w io.Writer) io.Writer {
	if t, ok := w.(*Writer); ok {
		return t.w
	}
	return w
}

func (t *Writer) Write(p []byte) (int, error) {
	t.buf = appendEscaped(t.buf[:0], p)
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// appendEscaped appends p to dst with C0 controls (but newline and tab),
// DEL, the C1 controls U+0080..U+009F and the bidirectional formatting
// characters escaped: an override or isolate (U+202A..U+202E,
// U+2066..U+2069) or a direction mark (U+200E, U+200F, U+061C) from
// upstream would reorder what the terminal shows of the rest of the line.
func appendEscaped(dst, p []byte) []byte {
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch {
		case b == '\n' || b == '\t':
			dst = append(dst, b)
		case b < 0x20 || b == 0x7f:
			dst = fmt.Appendf(dst, `\x%02x`, b)
		case b == 0xc2 && i+1 < len(p) && p[i+1] >= 0x80 && p[i+1] <= 0x9f:
			dst = fmt.Appendf(dst, `\u%04x`, p[i+1])
			i++
		case (b == 0xe2 || b == 0xd8) && i+1 < len(p) && bidi(p[i:]):
			r, size := utf8.DecodeRune(p[i:])
			dst = fmt.Appendf(dst, `\u%04x`, r)
			i += size - 1
		default:
			dst = append(dst, b)
		}
	}
	return dst
}

// bidi reports whether p starts with a bidirectional formatting character.
func bidi(p []byte) bool {
	r, _ := utf8.DecodeRune(p)
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}
