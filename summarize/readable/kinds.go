package readable

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/microcosm-cc/bluemonday"
	"github.com/pmezard/go-difflib/difflib"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// feedRecord is the feed fetcher's evidence (docs/sources.md).
type feedRecord struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Link        string   `json:"link"`
	Published   string   `json:"published"`
	Updated     string   `json:"updated"`
	Authors     []string `json:"authors"`
	Categories  []string `json:"categories"`
	Description string   `json:"description"`
	Content     string   `json:"content"`
}

func feedDoc(in Input) Doc {
	var r feedRecord
	if err := json.Unmarshal(in.Evidence, &r); err != nil {
		return textDoc(in)
	}
	d := Doc{Headline: oneLine(r.Title), Link: SafeLink(r.Link)}
	if d.Headline == "" {
		d.Headline = oneLine(in.Title)
	}
	for _, a := range r.Authors {
		if a = oneLine(a); a != "" {
			d.Author = strings.TrimSpace(strings.Join([]string{d.Author, a}, ", "))
		}
	}
	d.Author = strings.TrimPrefix(d.Author, ", ")
	for _, c := range r.Categories {
		if c = oneLine(c); c != "" {
			d.Categories = append(d.Categories, c)
		}
	}
	for _, t := range []string{r.Published, r.Updated} {
		if at, err := time.Parse(time.RFC3339, t); err == nil {
			d.Date = at.UTC()
			break
		}
	}
	body := r.Content
	if strings.TrimSpace(body) == "" {
		body = r.Description
	}
	d.HTML = SafeHTML(body)
	d.Prose = PlainText(body)
	if in.Previous != nil {
		var old feedRecord
		if json.Unmarshal(in.Previous, &old) == nil {
			ob := old.Content
			if strings.TrimSpace(ob) == "" {
				ob = old.Description
			}
			oldText := oneLine(old.Title) + "\n\n" + strings.Join(PlainText(ob), "\n\n")
			newText := d.Headline + "\n\n" + strings.Join(d.Prose, "\n\n")
			d.Diff, d.Revised = Diff(oldText, newText), true
		}
	}
	return d
}

// policy is the safe subset of upstream HTML a feed item keeps: text
// structure and links, no scripts, styles, event handlers, forms, frames or
// images (the wiki's Content-Security-Policy would block remote images
// anyway). bluemonday is made for this and is well kept; an allow-list of
// our own over x/net/html would repeat its work.
var policy = func() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "em", "strong", "b", "i", "u", "s", "del", "ins", "sub", "sup",
		"ul", "ol", "li", "blockquote", "pre", "code", "h2", "h3", "h4", "h5", "h6", "hr",
		"dl", "dt", "dd", "table", "thead", "tbody", "tr", "th", "td", "figure", "figcaption")
	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireParseableURLs(true)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(false)
	return p
}()

// SafeHTML reduces upstream HTML to the safe subset.
func SafeHTML(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	if !strings.Contains(s, "<") {
		// Plain text: paragraphs, escaped.
		var b strings.Builder
		for _, p := range paragraphs(Clean(s)) {
			b.WriteString("<p>" + html.EscapeString(p) + "</p>\n")
		}
		return b.String()
	}
	return balance(policy.Sanitize(Clean(s)))
}

// balance re-parses sanitized HTML as the body of a <div> and renders it
// again, so every element is closed inside the item: an unbalanced <b>
// upstream cannot make the rest of the page bold.
func balance(s string) string {
	ctx := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(strings.NewReader(s), ctx)
	if err != nil {
		return html.EscapeString(s)
	}
	var b strings.Builder
	for _, n := range nodes {
		if err := html.Render(&b, n); err != nil {
			return html.EscapeString(s)
		}
	}
	return strings.TrimSpace(b.String())
}

// blockElements end a paragraph in PlainText.
var blockElements = map[string]bool{"p": true, "div": true, "br": true, "li": true, "h1": true, "h2": true,
	"h3": true, "h4": true, "h5": true, "h6": true, "blockquote": true, "pre": true, "tr": true, "section": true,
	"article": true, "ul": true, "ol": true, "table": true, "hr": true, "figure": true}

// PlainText is upstream HTML (or text) as plain paragraphs: the text of
// every element except scripts, styles and the like.
func PlainText(s string) []string {
	if !strings.Contains(s, "<") && !strings.Contains(s, "&") {
		return paragraphs(Clean(s))
	}
	z := html.NewTokenizer(strings.NewReader(s))
	var out []string
	var cur strings.Builder
	skip := 0
	flush := func() {
		if t := oneLine(cur.String()); t != "" {
			out = append(out, t)
		}
		cur.Reset()
	}
	for {
		switch z.Next() {
		case html.ErrorToken:
			flush()
			return out
		case html.TextToken:
			if skip == 0 {
				cur.Write(z.Text())
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			switch n := string(name); {
			case n == "script" || n == "style" || n == "noscript" || n == "template" || n == "iframe" || n == "object":
				skip++
			case blockElements[n]:
				flush()
			default:
				cur.WriteByte(' ')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch n := string(name); {
			case n == "script" || n == "style" || n == "noscript" || n == "template" || n == "iframe" || n == "object":
				if skip > 0 {
					skip--
				}
			case blockElements[n]:
				flush()
			}
		}
	}
}

// pageDoc reads the page fetcher's evidence: headers, "--- text" and
// "--- diff" (a unified diff against the previous text).
func pageDoc(in Input) Doc {
	s := Clean(string(in.Evidence))
	head, rest, _ := strings.Cut(s, "\n--- text\n")
	text, diff, _ := strings.Cut(rest, "\n--- diff\n")
	d := Doc{}
	for _, l := range strings.Split(head, "\n") {
		if u, ok := strings.CutPrefix(l, "page "); ok {
			d.Link = SafeLink(u)
		}
	}
	diff = strings.TrimSpace(diff)
	switch {
	case strings.HasPrefix(diff, "(") || diff == "":
		d.DiffNote = strings.Trim(diff, "()")
		d.Prose = paragraphs(text)
		if d.DiffNote == "" {
			d.DiffNote = "no difference recorded"
		}
		if len(d.Prose) > 0 {
			d.Headline = "First capture: " + truncate(oneLine(d.Prose[0]), 140)
		}
	default:
		d.Diff = parseUnified(diff)
		d.Revised = true
		d.Headline = diffHeadline(d.Diff)
	}
	return d
}

// parseUnified reads a unified diff into lines; file headers are dropped
// and hunk headers become gaps.
func parseUnified(diff string) []Line {
	var out []Line
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ "):
		case strings.HasPrefix(l, "@@"):
			out = append(out, Line{Op: "@", Text: hunkWhere(l)})
		case strings.HasPrefix(l, "+"), strings.HasPrefix(l, "-"), strings.HasPrefix(l, " "):
			out = append(out, Line{Op: l[:1], Text: l[1:]})
		case l == "":
			out = append(out, Line{Op: " "})
		}
		if len(out) >= MaxDiffLines {
			out = append(out, Line{Op: "@", Text: "diff cut at " + strconv.Itoa(MaxDiffLines) + " lines"})
			break
		}
	}
	// A trailing empty context line is the diff's final newline.
	for len(out) > 0 && out[len(out)-1].Op == " " && out[len(out)-1].Text == "" {
		out = out[:len(out)-1]
	}
	return out
}

// hunkWhere turns "@@ -3,4 +3,5 @@" into "line 3".
func hunkWhere(h string) string {
	f := strings.Fields(h)
	if len(f) >= 3 && strings.HasPrefix(f[2], "+") {
		n, _, _ := strings.Cut(f[2][1:], ",")
		return "line " + n
	}
	return ""
}

// diffHeadline states a diff in one line: its counts and the first added
// (else removed) line.
func diffHeadline(lines []Line) string {
	var add, del int
	var first string
	for _, l := range lines {
		switch l.Op {
		case "+":
			add++
			if first == "" && strings.TrimSpace(l.Text) != "" {
				first = l.Text
			}
		case "-":
			del++
		}
	}
	if first == "" {
		for _, l := range lines {
			if l.Op == "-" && strings.TrimSpace(l.Text) != "" {
				first = "removed " + l.Text
				break
			}
		}
	}
	h := fmt.Sprintf("%s added, %s removed", plural(add, "line"), plural(del, "line"))
	if first = oneLine(first); first != "" {
		h += ": " + truncate(first, 140)
	}
	return h
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// Diff is a line diff of a against b with three lines of context.
func Diff(a, b string) []Line {
	if a == b {
		return nil
	}
	al, bl := difflib.SplitLines(a), difflib.SplitLines(b)
	m := difflib.NewMatcher(al, bl)
	var out []Line
	trim := func(s string) string { return strings.TrimSuffix(s, "\n") }
	for _, g := range m.GetGroupedOpCodes(3) {
		out = append(out, Line{Op: "@", Text: "line " + strconv.Itoa(g[0].J1+1)})
		for _, c := range g {
			switch c.Tag {
			case 'e':
				for _, l := range al[c.I1:c.I2] {
					out = append(out, Line{Op: " ", Text: trim(l)})
				}
			case 'r', 'd', 'i':
				for _, l := range al[c.I1:c.I2] {
					out = append(out, Line{Op: "-", Text: trim(l)})
				}
				for _, l := range bl[c.J1:c.J2] {
					out = append(out, Line{Op: "+", Text: trim(l)})
				}
			}
		}
		if len(out) >= MaxDiffLines {
			out = append(out[:MaxDiffLines], Line{Op: "@", Text: "diff cut at " + strconv.Itoa(MaxDiffLines) + " lines"})
			break
		}
	}
	for len(out) > 0 && out[len(out)-1].Op == " " && strings.TrimSpace(out[len(out)-1].Text) == "" {
		out = out[:len(out)-1]
	}
	return out
}

// jsonDoc lists the changed values by path, old → new. At the first
// revision every value is new.
func jsonDoc(in Input) Doc {
	cur, err := flatten(in.Evidence)
	if err != nil {
		return textDoc(in)
	}
	d := Doc{}
	old := map[string]string{}
	if in.Previous != nil {
		if o, err := flatten(in.Previous); err == nil {
			old, d.Revised = o, true
		}
	}
	paths := make([]string, 0, len(cur)+len(old))
	for p := range cur {
		paths = append(paths, p)
	}
	for p := range old {
		if _, ok := cur[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var added, removed, changed int
	for _, p := range paths {
		o, had := old[p]
		n, has := cur[p]
		var f Field
		switch {
		case had && has && o == n:
			continue
		case had && has:
			f, changed = Field{Path: p, Change: "changed", Old: o, New: n}, changed+1
		case has:
			f, added = Field{Path: p, Change: "added", New: n}, added+1
		default:
			f, removed = Field{Path: p, Change: "removed", Old: o}, removed+1
		}
		if len(d.Fields) < MaxFields {
			f.Old, f.New = truncate(f.Old, maxValue), truncate(f.New, maxValue)
			d.Fields = append(d.Fields, f)
		}
	}
	switch {
	case !d.Revised:
		d.Headline = fmt.Sprintf("First capture: %s", plural(added, "value"))
	case added+removed+changed == 0:
		d.Headline = "No value changed"
	default:
		var parts []string
		for _, c := range []struct {
			n    int
			what string
		}{{changed, "changed"}, {added, "added"}, {removed, "removed"}} {
			if c.n > 0 {
				parts = append(parts, fmt.Sprintf("%s %s", plural(c.n, "value"), c.what))
			}
		}
		d.Headline = strings.Join(parts, ", ")
		if len(d.Fields) == 1 {
			d.Headline = fieldLine(d.Fields[0])
		}
	}
	return d
}

// flatten maps every leaf of a JSON document to its path (.a.b[0]) and its
// JSON text; empty objects and arrays are leaves.
func flatten(doc []byte) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 {
				out[path] = "{}"
			}
			for k, e := range x {
				walk(path+"."+key(k), e)
			}
		case []any:
			if len(x) == 0 {
				out[path] = "[]"
			}
			for i, e := range x {
				walk(path+"["+strconv.Itoa(i)+"]", e)
			}
		default:
			b, _ := json.Marshal(x)
			out[path] = Clean(string(b))
		}
	}
	walk("", v)
	if p, ok := out[""]; ok {
		delete(out, "")
		out["."] = p
	}
	return out, nil
}

// key is an object key in a path: bare when it is an identifier, quoted
// otherwise.
func key(k string) string {
	for i, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			b, _ := json.Marshal(k)
			return Clean(string(b))
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// dirDoc reads a file change: its headers and text, diffed against the
// previous revision's text when both are text.
func dirDoc(in Input) Doc {
	f, text := parseDir(in.Evidence)
	d := Doc{File: &f}
	d.Headline = fmt.Sprintf("%s %s", strings.ToUpper(f.Change[:min(1, len(f.Change))])+f.Change[min(1, len(f.Change)):], f.Path)
	if f.Size != "" && f.Change != "removed" {
		d.Headline += " (" + humanSize(f.Size) + ")"
	}
	switch {
	case f.Change == "removed":
		if in.Previous != nil {
			if _, old := parseDir(in.Previous); old != "" {
				d.Diff = Diff(old, "")
			}
		}
	case in.Previous != nil:
		_, old := parseDir(in.Previous)
		if old != "" || text != "" {
			d.Diff, d.Revised = Diff(old, text), true
		} else {
			d.DiffNote = "not a small text file: no text diff"
		}
	case text != "":
		d.Prose = []string{text}
	default:
		d.DiffNote = "not a small text file: no text shown"
	}
	if f.Change == "changed" && in.Previous == nil && text != "" {
		d.DiffNote = "the previous text is not kept for this revision"
	}
	if len(d.Diff) > 0 {
		counts, _, _ := strings.Cut(diffHeadline(d.Diff), ":")
		d.Headline += ": " + counts
	}
	return d
}

func parseDir(ev []byte) (File, string) {
	s := Clean(string(ev))
	head, text, _ := strings.Cut(s, "\n\n")
	var f File
	for _, l := range strings.Split(head, "\n") {
		k, v, _ := strings.Cut(l, " ")
		switch k {
		case "file":
			f.Path = oneLine(v)
		case "change":
			f.Change = oneLine(v)
		case "size":
			f.Size = v
		case "sha256":
			f.SHA256 = v
		}
	}
	return f, text
}

func humanSize(s string) string {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return s
	}
	switch {
	case n < 1024:
		return plural(int(n), "byte")
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// gitDoc reads the git fetcher's commit evidence.
func gitDoc(in Input) Doc {
	c := parseCommit(Clean(string(in.Evidence)))
	if c == nil {
		return textDoc(in)
	}
	c.URL = CommitURL(in.Location, c.Hash)
	return Doc{Headline: c.Subject, Author: c.Author, Commit: c, Link: c.URL}
}

func parseCommit(ev string) *Commit {
	c := &Commit{}
	var msg []string
	var inMessage, inStat bool
	type stat struct {
		f FileStat
		n int
	}
	var files []stat
	sc := bufio.NewScanner(strings.NewReader(ev))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "commit ") && c.Hash == "" && !inMessage:
			c.Hash = strings.TrimSpace(strings.TrimPrefix(line, "commit "))
		case strings.HasPrefix(line, "    ") && !inStat:
			inMessage = true
			msg = append(msg, strings.TrimPrefix(line, "    "))
		case strings.HasPrefix(line, "author ") && !inMessage:
			a := strings.TrimPrefix(line, "author ")
			if i := strings.Index(a, " <"); i >= 0 {
				a = a[:i]
			}
			c.Author = oneLine(a)
		case inMessage && (strings.Contains(line, " files changed, ") || strings.Contains(line, " file changed, ")):
			c.Stat, inStat = strings.TrimSpace(line), true
		case inStat && line != "":
			parts := strings.SplitN(line, "\t", 3)
			if len(parts) == 3 {
				a, _ := strconv.Atoi(parts[0])
				d, _ := strconv.Atoi(parts[1])
				files = append(files, stat{FileStat{Path: oneLine(parts[2]), Added: parts[0], Deleted: parts[1]}, a + d})
			}
		}
	}
	if len(msg) == 0 {
		return nil
	}
	c.Subject = oneLine(msg[0])
	// A paragraph keeps its lines (and their indentation): they may be a
	// list, or trailers, which joined into one line read as neither.
	var para []string
	for _, l := range msg[1:] {
		if strings.TrimSpace(l) == "" {
			if len(para) > 0 {
				c.Body = append(c.Body, strings.Join(para, "\n"))
				para = nil
			}
			continue
		}
		para = append(para, strings.TrimRightFunc(l, unicode.IsSpace))
	}
	if len(para) > 0 {
		c.Body = append(c.Body, strings.Join(para, "\n"))
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].n > files[j].n })
	for _, f := range files {
		c.Files = append(c.Files, f.f)
	}
	return c
}

// webForms are the forges whose commit pages tidemark knows.
var webForms = map[string]string{
	"github.com":    "https://github.com/%s/commit/%s",
	"gitlab.com":    "https://gitlab.com/%s/-/commit/%s",
	"codeberg.org":  "https://codeberg.org/%s/commit/%s",
	"bitbucket.org": "https://bitbucket.org/%s/commits/%s",
	"git.sr.ht":     "https://git.sr.ht/%s/commit/%s",
}

// CommitURL is the web page of commit hash in the repository at location,
// when location is a remote on a known forge (https, ssh, git or scp-like
// form); "" otherwise (local paths among them).
func CommitURL(location, hash string) string {
	if hash == "" || strings.ContainsAny(hash, "/?#") {
		return ""
	}
	var host, path string
	if u, err := url.Parse(location); err == nil && u.Host != "" &&
		(u.Scheme == "https" || u.Scheme == "http" || u.Scheme == "ssh" || u.Scheme == "git") {
		host, path = u.Hostname(), u.Path
	} else if at, rest, ok := strings.Cut(location, "@"); ok && !strings.Contains(at, "/") {
		// scp-like: git@github.com:owner/repo.git
		host, path, _ = strings.Cut(rest, ":")
	}
	form, ok := webForms[strings.ToLower(host)]
	if !ok {
		return ""
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	if path == "" || strings.Contains(path, "..") {
		return ""
	}
	return fmt.Sprintf(form, path, url.PathEscape(hash))
}
