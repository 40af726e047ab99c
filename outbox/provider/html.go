package provider

import (
	"html"
	"regexp"
	"strings"
)

var urlRE = regexp.MustCompile(`https?://[^\s<>"]+[^\s<>".,;:!?)\]]`)

// TextHTML renders a plain-text body as the HTML a provider sends beside
// it (Matrix's formatted_body, an email's text/html part): every character
// escaped, blank-line separated paragraphs as <p>, the first one (the
// title) in <strong>, line breaks as <br>, and http(s) URLs as links. It
// is a pure function of the body, so every attempt at one intent sends the
// same HTML.
func TextHTML(body string) string {
	body = strings.ReplaceAll(strings.TrimSpace(body), "\r\n", "\n")
	if body == "" {
		return ""
	}
	var b strings.Builder
	for i, para := range strings.Split(body, "\n\n") {
		para = strings.Trim(para, "\n")
		if para == "" {
			continue
		}
		var lines []string
		for _, line := range strings.Split(para, "\n") {
			lines = append(lines, linkify(line))
		}
		inner := strings.Join(lines, "<br>")
		if i == 0 {
			inner = "<strong>" + inner + "</strong>"
		}
		b.WriteString("<p>" + inner + "</p>")
	}
	return b.String()
}

// linkify escapes a line and makes its URLs links.
func linkify(line string) string {
	var b strings.Builder
	last := 0
	for _, m := range urlRE.FindAllStringIndex(line, -1) {
		b.WriteString(html.EscapeString(line[last:m[0]]))
		u := html.EscapeString(line[m[0]:m[1]])
		b.WriteString(`<a href="` + u + `">` + u + `</a>`)
		last = m[1]
	}
	b.WriteString(html.EscapeString(line[last:]))
	return b.String()
}
