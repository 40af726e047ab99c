// Package terminal is what tidemark's output goes through on its way to a
// terminal: a Writer that escapes the control characters text from
// upstream could carry, and progress displays drawn only when the output
// is a terminal, so scripts, logs and --json stay clean. It holds the
// command line's terminal dependencies (a progress bar, golang.org/x/term).
package terminal

import (
	"fmt"
	"io"
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
