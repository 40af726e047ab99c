package feed

import (
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/tidemark/tidemark/fetch/canon"
)

// htmlText reduces an HTML fragment (a description, a title with markup)
// to one line of plain text: tags dropped, entities decoded, the contents
// of script and style skipped, block boundaries and whitespace runs one
// space.
func htmlText(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return canon.Line(s)
	}
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return canon.Line(strings.Map(dropControl, b.String()))
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case a == atom.Script || a == atom.Style:
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
			case !inline[a]:
				b.WriteByte(' ')
			}
		}
	}
}

// inline elements do not separate words.
var inline = map[atom.Atom]bool{
	atom.A: true, atom.Abbr: true, atom.B: true, atom.Bdi: true, atom.Bdo: true, atom.Cite: true, atom.Code: true,
	atom.Data: true, atom.Dfn: true, atom.Em: true, atom.Font: true, atom.I: true, atom.Kbd: true, atom.Mark: true,
	atom.Q: true, atom.S: true, atom.Samp: true, atom.Small: true, atom.Span: true, atom.Strike: true,
	atom.Strong: true, atom.Sub: true, atom.Sup: true, atom.Time: true, atom.Tt: true, atom.U: true, atom.Var: true,
}

// plainText is a title as plain text. A title with entities, or whose
// every tag is an HTML element (<b>, <em>, <code>), is HTML and reduced
// by htmlText; one with a tag HTML does not know ("Vector<int>",
// "List<T>") is plain text that happens to hold a '<', and stays as it is.
func plainText(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return canon.Line(s)
	}
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return htmlText(s)
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) == 0 {
				return canon.Line(s)
			}
		}
	}
}

// dropControl drops the control characters an entity may decode to
// (&#1;), keeping whitespace for canon.Line to collapse.
func dropControl(r rune) rune {
	if unicode.IsControl(r) && !unicode.IsSpace(r) {
		return -1
	}
	return r
}
