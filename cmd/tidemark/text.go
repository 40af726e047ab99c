package main

import (
	"fmt"
	"io"
)

// textWriter is the one place text output passes through on its way to a
// terminal: it escapes the control characters that text from upstream
// (titles, error messages, evidence, a server's answer) could carry, so an
// ESC or a C1 control is printed as \x1b or \u009b instead of driving the
// terminal. Newlines and tabs pass: they are the layout. JSON output and
// raw bytes asked for on purpose (evidence, an OPML export) go to the
// writer underneath (see raw): JSON escapes its strings itself.
//
// Each Write is escaped on its own; the printers write a string whole, so
// a character's encoding is never split between two Writes.
type textWriter struct {
	w   io.Writer
	buf []byte
}

func newTextWriter(w io.Writer) *textWriter { return &textWriter{w: w} }

// raw returns the writer under w if w is a textWriter, else w itself.
func raw(w io.Writer) io.Writer {
	if t, ok := w.(*textWriter); ok {
		return t.w
	}
	return w
}

func (t *textWriter) Write(p []byte) (int, error) {
	t.buf = appendEscaped(t.buf[:0], p)
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// appendEscaped appends p to dst with C0 controls (but newline and tab),
// DEL and the C1 controls U+0080..U+009F escaped.
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
		default:
			dst = append(dst, b)
		}
	}
	return dst
}

// escapeText returns s as a textWriter prints it.
func escapeText(s string) string { return string(appendEscaped(nil, []byte(s))) }
