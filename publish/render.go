package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/redact"
	"github.com/tidemark/tidemark/summarize"
	"github.com/tidemark/tidemark/summarize/readable"
)

// The wiki is static HTML: no JavaScript, relative links only, so it can be
// served from the directory or the bucket as it stands. Everything shown is
// escaped by html/template: upstream text is text, never markup, except a
// feed item's body, which package readable reduces to a safe subset of
// HTML first; URLs with unsafe schemes are neutralized. The wiki never
// shows a local filesystem path: a source's location is shown only when it
// is an http(s) URL.

const style = `:root{--fg:#1d2330;--muted:#5d6678;--line:#e3e6ec;--accent:#0b5cd5;--bg:#fff;--soft:#f5f7fa;--add:#e6f6ea;--addfg:#135c2a;--del:#fdecec;--delfg:#8a1f1f}
*{box-sizing:border-box}body{font:16px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:var(--fg);background:var(--bg)}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
.top{border-bottom:1px solid var(--line);background:var(--soft)}.top div{max-width:52rem;margin:0 auto;padding:.6rem 1rem;display:flex;gap:1rem;align-items:baseline}
.brand{font-weight:700;color:var(--fg);letter-spacing:.02em}.top .links{margin-left:auto;font-size:.9rem}
.wrap{max-width:52rem;margin:0 auto;padding:1rem}
.crumbs{font-size:.9rem;color:var(--muted);margin:.5rem 0 1rem}.crumbs a{color:var(--muted)}
h1{font-size:1.6rem;line-height:1.25;margin:.2rem 0 .4rem;overflow-wrap:anywhere}h2{font-size:1.15rem;margin:1.8rem 0 .6rem}
.meta{color:var(--muted);font-size:.9rem;margin:.2rem 0 1rem}.meta span+span:before{content:"·";margin:0 .45rem}
.lead{font-size:1.1rem;margin:1rem 0}.tag{display:inline-block;background:var(--soft);border:1px solid var(--line);border-radius:1rem;padding:0 .55rem;font-size:.8rem;margin-right:.25rem}
.prose{overflow-wrap:anywhere}.prose pre,pre.text{background:var(--soft);padding:.75rem;border-radius:6px;overflow:auto;white-space:pre-wrap}
.summary{background:var(--soft);border-left:3px solid var(--accent);padding:.5rem 1rem;border-radius:0 6px 6px 0}.summary p{white-space:pre-line}
pre.diff{border:1px solid var(--line);border-radius:6px;overflow:auto;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;padding:.3rem 0;white-space:pre-wrap}
pre.diff span{display:block;padding:0 .75rem}.diff .add{background:var(--add);color:var(--addfg)}.diff .del{background:var(--del);color:var(--delfg)}
.diff .gap{color:var(--muted);background:var(--soft);font-style:italic}
table{border-collapse:collapse;width:100%;font-size:.95rem}th{text-align:left;color:var(--muted);font-weight:600;border-bottom:2px solid var(--line)}th.num{text-align:right}th.num,td.num{width:1%;padding-left:1.5rem}
td,th{padding:.4rem .5rem;vertical-align:top;border-bottom:1px solid var(--line)}td.when{white-space:nowrap;width:1%;color:var(--muted);font-size:.85rem;padding-top:.55rem}
td.num{text-align:right;white-space:nowrap}td code,td.val{overflow-wrap:anywhere}td.old{background:var(--del)}td.new{background:var(--add)}
code{font:.88em ui-monospace,SFMono-Regular,Menlo,monospace}
aside{border-left:3px solid #c9a227;background:#fffbea;padding:.5rem 1rem;margin:1.5rem 0;border-radius:0 6px 6px 0}
.pager{display:flex;gap:1rem;justify-content:space-between;margin:1.2rem 0;font-size:.95rem}.pages{font-size:.9rem;color:var(--muted);line-height:2}
.pages a,.pages strong{display:inline-block;min-width:2rem;text-align:center}
footer{max-width:52rem;margin:2rem auto 1rem;padding:1rem;border-top:1px solid var(--line);color:var(--muted);font-size:.8rem;overflow-wrap:anywhere}
.neighbours{border-top:1px solid var(--line);padding-top:1rem;margin-top:2rem}.neighbours a{max-width:48%;overflow-wrap:anywhere}.neighbours a[rel=next]{text-align:right}
.what{color:var(--muted);font-size:.88rem;overflow-wrap:anywhere}
.empty{color:var(--muted);padding:2rem;text-align:center;background:var(--soft);border-radius:6px}
form.search{display:flex;gap:.5rem;margin:1rem 0}form.search input{flex:1;font:inherit;padding:.45rem .6rem;border:1px solid var(--line);border-radius:6px}
form.search button{font:inherit;padding:.45rem 1rem;border:0;border-radius:6px;background:var(--accent);color:#fff}
ol.hits{padding-left:1.4rem}ol.hits li{margin:0 0 1rem}.snippet{margin:.2rem 0;color:var(--muted);font-size:.92rem;overflow-wrap:anywhere}
mark{background:#fff0a8;color:inherit;padding:0 .1em;border-radius:2px}.error{color:var(--delfg);background:var(--del);padding:.5rem 1rem;border-radius:6px}
table.changes td{overflow-wrap:anywhere}table.changes td.src{width:1%;white-space:nowrap;overflow-wrap:normal}
@media (max-width:40rem){table.changes,table.changes tbody,table.changes tr,table.changes td{display:block;width:auto}
table.changes tr{border-bottom:1px solid var(--line);padding:.45rem 0}table.changes td{border:0;padding:.05rem 0}
table.changes td.when{padding-top:0}table.changes td.src{width:auto;color:var(--muted);font-size:.85rem;white-space:normal;overflow-wrap:anywhere}
th.num,td.num{padding-left:.6rem}}`

var (
	funcs = template.FuncMap{
		"date":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"iso":        func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"shortHash":  func(s string) string { return short(s, 12) },
		"add":        func(a, b int) int { return a + b },
		"listTitle":  ListTitle,
		"paragraphs": paragraphs,
		"bodyBlocks": bodyBlocks,
		// path lets a file path wrap after each slash, not inside a name.
		"path": func(p string) template.HTML {
			parts := strings.Split(p, "/")
			for i := range parts {
				parts[i] = template.HTMLEscapeString(parts[i])
			}
			return template.HTML(strings.Join(parts, "/<wbr>"))
		},
		"diffClass": func(op string) string {
			switch op {
			case "+":
				return "add"
			case "-":
				return "del"
			case "@":
				return "gap"
			}
			return "ctx"
		},
		"diffMark": func(op string) string {
			if op == "@" {
				return "⋯ "
			}
			return op + " "
		},
	}
	pageTmpl = wikiTemplate("page", `{{.Title}} · {{.Source.Name}}`, `../`, `<nav class="crumbs"><a href="../index.html">All changes</a> › <a href="../sources/{{.Source.ID}}.html">{{.Source.Name}}</a></nav>
<main>
<article>
<h1>{{.Title}}</h1>
<p class="meta"><span><time datetime="{{iso .Event.OccurredAt}}">{{date .Event.OccurredAt}}</time></span><span>{{.Source.Kind}}</span>{{if .Doc.Author}}<span>by {{.Doc.Author}}</span>{{end}}{{if gt .Event.Revision 1}}<span>revision {{.Event.Revision}}</span>{{end}}{{if .Link}}<span><a href="{{.Link}}" rel="nofollow noopener noreferrer">{{if .Doc.Commit}}view commit upstream{{else}}upstream{{end}}</a></span>{{end}}</p>
{{if .Lead}}<p class="lead">{{.Lead}}</p>
{{end}}{{with .Doc.Categories}}<p>{{range .}}<span class="tag">{{.}}</span>{{end}}</p>
{{end}}{{if .Summary}}<section class="summary">
{{range .Summary}}<p>{{.}}</p>
{{end}}</section>
{{end}}{{with .Doc.Commit}}{{range bodyBlocks .Body}}{{if eq .List "ul"}}<ul>
{{range .Lines}}<li>{{.}}</li>
{{end}}</ul>
{{else if eq .List "ol"}}<ol{{if ne .Start 1}} start="{{.Start}}"{{end}}>
{{range .Lines}}<li>{{.}}</li>
{{end}}</ol>
{{else}}<p>{{range $i, $l := .Lines}}{{if $i}}<br>{{end}}{{$l}}{{end}}</p>
{{end}}{{end}}{{if .Stat}}<h2>{{.Stat}}</h2>
<table><tr><th>File</th><th class="num">Added</th><th class="num">Removed</th></tr>
{{range .Files}}<tr><td><code>{{path .Path}}</code></td><td class="num">{{.Added}}</td><td class="num">{{.Deleted}}</td></tr>
{{end}}</table>
{{end}}{{end}}{{if .HTML}}<div class="prose">
{{.HTML}}
</div>
{{else if .Doc.File}}{{if .Doc.Prose}}<h2>Text</h2>
<pre class="text">{{index .Doc.Prose 0}}</pre>
{{end}}{{else if and .Doc.Prose (not .Doc.Diff)}}<div class="prose">
{{range .Doc.Prose}}<p>{{.}}</p>
{{end}}</div>
{{end}}{{with .Doc.Fields}}<h2>{{if $.Doc.Revised}}Changed values{{else}}Values{{end}}</h2>
<table><tr><th>Path</th>{{if $.Doc.Revised}}<th>Before</th>{{end}}<th>{{if $.Doc.Revised}}After{{else}}Value{{end}}</th></tr>
{{range .}}<tr><td><code>{{.Path}}</code></td>{{if $.Doc.Revised}}<td class="val{{if .Old}} old{{end}}">{{if .Old}}<code>{{.Old}}</code>{{else}}—{{end}}</td>{{end}}<td class="val{{if and .New $.Doc.Revised}} new{{end}}">{{if .New}}<code>{{.New}}</code>{{else}}—{{end}}</td></tr>
{{end}}</table>
{{end}}{{if .Doc.Diff}}<h2>{{if .Doc.Revised}}What changed since the previous revision{{else}}What changed{{end}}</h2>
<pre class="diff">{{range .Doc.Diff}}<span class="{{diffClass .Op}}">{{diffMark .Op}}{{.Text}}</span>{{end}}</pre>
{{end}}{{if .Doc.DiffNote}}<p class="meta">{{.Doc.DiffNote}}.</p>
{{end}}{{if .Notes}}<aside>{{range paragraphs .Notes}}<p>{{.}}</p>{{end}}</aside>
{{end}}{{if or .Older .Newer}}<nav class="pager neighbours">{{with .Older}}<a href="{{.PageID}}.html" rel="prev"{{with .FullTitle}} title="{{.}}"{{end}}>← {{.Title}}</a>{{else}}<span></span>{{end}}{{with .Newer}}<a href="{{.PageID}}.html" rel="next"{{with .FullTitle}} title="{{.}}"{{end}}>{{.Title}} →</a>{{end}}</nav>
{{end}}</article>
</main>
<footer>Evidence sha256:<code>{{.Summary0.EvidenceHash}}</code>, revision {{.Event.Revision}} (<a href="../evidence/{{.Event.ID}}/{{.Event.Revision}}">download</a> with <code>tidemark serve</code>). Summary by {{.Summary0.Model}}, prompt {{.Summary0.PromptVersion}}.{{if .Generation}} Publication generation {{.Generation}}.{{end}}</footer>
`)
	cardTmpl = wikiTemplate("card", `{{.Source.Name}}{{if gt .Page 1}} · archive {{add .Page -1}}{{end}} · tidemark`, `{{.Root}}`, `<nav class="crumbs"><a href="{{.Root}}index.html">All changes</a> › {{if gt .Page 1}}<a href="{{.Root}}sources/{{.Source.ID}}.html">{{.Source.Name}}</a> › archive {{add .Page -1}}{{else}}{{.Source.Name}}{{end}}</nav>
<main>
<h1>{{.Source.Name}}</h1>
<p class="meta"><span>{{.Source.Kind}} source</span>{{if .Location}}<span><a href="{{.Location}}" rel="nofollow noopener noreferrer">{{.Location}}</a></span>{{end}}{{if eq .Page 1}}<span>{{.Total}} changes</span>{{end}}<span><a href="{{.Root}}sources/{{.Source.ID}}.atom">Atom feed</a></span></p>
{{template "listing" .}}
</main>
`)
	indexTmpl = wikiTemplate("index", `{{if gt .Page 1}}All changes · archive {{add .Page -1}} · {{end}}tidemark`, `{{.Root}}`, `{{if gt .Page 1}}<nav class="crumbs"><a href="{{.Root}}index.html">All changes</a> › archive {{add .Page -1}}</nav>
{{end}}<main>
{{if eq .Page 1}}<h1>Changes</h1>
{{if .Sources}}<h2>Sources</h2>
<table><tr><th>Source</th><th>Kind</th><th class="num">Changes</th></tr>
{{range .Sources}}<tr><td><a href="sources/{{.ID}}.html">{{.Name}}</a></td><td>{{.Kind}}</td><td class="num">{{.Pages}}</td></tr>
{{end}}</table>
<h2>Newest changes</h2>
{{end}}{{else}}<h1>All changes · archive {{add .Page -1}}</h1>
{{end}}{{template "listing" .}}
</main>
`)
)

// templateDigests are the wiki templates' sources' digests, by name: a
// listing object's digest includes its template's, so a release that
// changes a template rewrites what it renders.
var templateDigests = map[string]string{}

// listingFormat is in every wiki object's digest (a listing object's, and
// the change pages' PageFormat): bump it when Go code changes what the
// templates write (a template function, package readable's rendering of
// evidence), which the templates' sources do not show.
const listingFormat = "2"

// PageFormat is the format change pages are rendered in: the digest of
// the page template, its style and listingFormat. A page published in
// another is republished by the next pass or sweep (Store.Restyle).
func PageFormat() string { return templateDigests["page"] }

// listing is the shared table of changes with its pager: entries newest
// first; the front page links to every archive page, an archive page to
// its neighbours, the front page and the oldest.
const listing = `{{define "listing"}}{{if .Entries}}<table class="changes">
{{range .Entries}}<tr><td class="when"><time datetime="{{iso .OccurredAt}}">{{date .OccurredAt}}</time></td><td><a href="{{$.Root}}changes/{{.PageID}}.html"{{with .FullTitle}} title="{{.}}"{{end}}>{{.Title}}</a>{{if .Headline}}<div class="what">{{.Headline}}</div>{{end}}</td>{{if $.SourceNames}}<td class="src">{{index $.SourceNames .SourceID}}</td>{{end}}</tr>
{{end}}</table>
{{if or .Newer .Older}}<nav class="pager">{{if .Newer}}<a href="{{.Newer}}">← Newer</a>{{else}}<span></span>{{end}}{{if .Older}}<a href="{{.Older}}">Older →</a>{{end}}</nav>
{{if .Links}}<p class="pages">Archive (1 is the oldest): {{range .Links}}{{if .Current}}<strong>{{.Label}}</strong> {{else}}<a href="{{.Href}}">{{.Label}}</a> {{end}}{{end}}</p>
{{else}}<p class="pages"><a href="{{.Newest}}">Newest</a> · {{if eq .Page 2}}<strong>1</strong> (the oldest){{else}}<a href="{{.Oldest}}">1</a> (the oldest){{end}}</p>
{{end}}{{end}}{{else}}<p class="empty">No published changes yet.</p>
{{end}}{{end}}`

// wikiTemplate wraps a body in the document every wiki object shares: the
// head (with the publication generation, when there is one), the style and
// the top bar. root is the relative path to the wiki's root.
func wikiTemplate(name, title, root, body string) *template.Template {
	src := `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="tidemark">{{if .Generation}}
<meta name="tidemark-generation" content="{{.Generation}}">{{end}}
<title>` + title + `</title>
<link rel="alternate" type="application/atom+xml" title="All changes" href="` + root + `feed.atom">
<style>` + style + `</style>
</head>
<body>
<header class="top"><div><a class="brand" href="` + root + `index.html">tidemark</a><span class="links"><a href="` + root + `feed.atom">Atom feed</a></span></div></header>
<div class="wrap">
` + body + `</div>
</body>
</html>
`
	templateDigests[name] = tidemark.HashEvidence([]byte(listingFormat + "\x00" + src + "\x00" + listing))
	t := template.Must(template.New(name).Funcs(funcs).Parse(src))
	return template.Must(t.Parse(listing))
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// bodyBlock is a paragraph or a list of a commit message's body.
type bodyBlock struct {
	// List is "ul" or "ol" for a list (Lines are its items), "" for a
	// paragraph (Lines are shown one a line).
	List  string
	Start int // an ordered list's first number
	Lines []string
}

// bodyBlocks reads a commit body's paragraphs (package readable keeps
// their lines) as people write them in plain text: a line that starts with
// "- " or "* " is an item of a list, one that starts with "1. " or "1) "
// an item of a numbered list, and a line after an item continues it. Other
// lines are hard-wrapped prose and flow together, except trailers
// ("Signed-off-by: …"), which stay one a line. Every line stays text.
func bodyBlocks(body []string) []bodyBlock {
	var out []bodyBlock
	for _, para := range body {
		var text []string
		flush := func() {
			if len(text) == 0 {
				return
			}
			b := bodyBlock{Lines: text}
			if !allTrailers(text) {
				b.Lines = []string{strings.Join(text, " ")}
			}
			out, text = append(out, b), nil
		}
		list := -1 // the list in out that the last line was an item of
		for _, l := range strings.Split(para, "\n") {
			l = strings.TrimSpace(l)
			switch kind, n, item := listItem(l); {
			case kind != "":
				flush()
				if list < 0 || out[list].List != kind {
					out = append(out, bodyBlock{List: kind, Start: n})
					list = len(out) - 1
				}
				out[list].Lines = append(out[list].Lines, item)
			case list >= 0:
				items := out[list].Lines
				items[len(items)-1] += " " + l
			default:
				text = append(text, l)
			}
		}
		flush()
	}
	return out
}

// listItem says whether line is a list item: its list's kind ("ul", "ol"),
// its number in an ordered list, and its text.
func listItem(line string) (kind string, n int, item string) {
	if rest, ok := strings.CutPrefix(line, "- "); ok {
		return "ul", 0, strings.TrimSpace(rest)
	}
	if rest, ok := strings.CutPrefix(line, "* "); ok {
		return "ul", 0, strings.TrimSpace(rest)
	}
	i := 0
	for i < len(line) && i < 9 && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	if i == 0 || !strings.HasPrefix(line[i:], ". ") && !strings.HasPrefix(line[i:], ") ") {
		return "", 0, ""
	}
	n, _ = strconv.Atoi(line[:i])
	return "ol", n, strings.TrimSpace(line[i+2:])
}

// trailer is a line of a git trailer block ("Signed-off-by: Ann").
var trailer = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*: \S`)

func allTrailers(lines []string) bool {
	for _, l := range lines {
		if !trailer.MatchString(l) {
			return false
		}
	}
	return len(lines) > 1
}

func paragraphs(text string) []string {
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(readable.Clean(p)); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// readableInput gathers what package readable needs for an event: its
// evidence (which must be the one hashed want, when want is set) and the
// previous revision's.
func (s *Service) readableInput(ctx context.Context, ev tidemark.Event, src SourceInfo, want string) (readable.Input, string, error) {
	evidence, hash, err := s.Store.Evidence(ctx, ev.ID)
	if err != nil {
		return readable.Input{}, "", err
	}
	if want != "" && hash != want {
		return readable.Input{}, "", fmt.Errorf("event %s re-frozen (evidence %.12s, wanted %.12s): %w", ev.ID, hash, want, ErrSuperseded)
	}
	// The location a page and a summarizer see is the shown one.
	in := readable.Input{Kind: src.Kind, Title: ev.Title, Location: redact.Location(src.Location), Evidence: evidence}
	if ev.Revision > 1 {
		prev, _, err := s.Store.Revision(ctx, ev.ID, ev.Revision-1)
		switch {
		case errors.Is(err, tidemark.ErrNotFound):
		case err != nil:
			return readable.Input{}, "", err
		default:
			in.Previous = prev
		}
	}
	return in, hash, nil
}

// summarizeInput is readableInput for a summarizer.
func (s *Service) summarizeInput(ctx context.Context, ev tidemark.Event) (summarize.Input, string, error) {
	src, err := s.Store.SourceOf(ctx, ev.SourceID)
	if err != nil {
		return summarize.Input{}, "", err
	}
	in, hash, err := s.readableInput(ctx, ev, src, "")
	if err != nil {
		return summarize.Input{}, "", err
	}
	return summarize.Input{Event: ev, Kind: in.Kind, Location: in.Location, Evidence: in.Evidence, Previous: in.Previous}, hash, nil
}

// extractiveModel is the model name of drafts that are the readable
// content itself; a page does not repeat them as a summary.
const extractiveModel = "extractive"

// renderPage renders a change page for a plan: the readable content of the
// summary's frozen evidence, and the summary itself when a model wrote it.
// It sets the plan's Title and SearchText.
func (s *Service) renderPage(ctx context.Context, p *Plan) ([]byte, error) {
	title, notes, err := s.override(ctx, p.Event)
	if err != nil {
		return nil, fmt.Errorf("page %s overrides: %w", p.PageID, err)
	}
	in, _, err := s.readableInput(ctx, p.Event, p.Source, p.Summary.EvidenceHash)
	if err != nil {
		return nil, fmt.Errorf("page %s evidence: %w", p.PageID, err)
	}
	doc := readable.Build(in)
	if (title == p.Source.Location || title == in.Location) && title != "" {
		// A page with no title of its own is named by its source.
		title = readable.Clean(p.Source.Name)
	}
	link := doc.Link
	if link == "" {
		link = readable.SafeLink(p.Event.URL)
	}
	var lead string
	if doc.Headline != "" && doc.Headline != title && doc.Commit == nil {
		lead = doc.Headline
	}
	var sum []string
	if p.Summary.Model != extractiveModel {
		sum = paragraphs(p.Summary.Text)
	}
	p.Title, p.Headline = title, lead
	if p.Older, p.Newer, err = s.Store.Neighbours(ctx, p.PageID, p.Event); err != nil {
		return nil, err
	}
	shown := func(l *PageLink) *listingRow {
		if l == nil {
			return nil
		}
		r := &listingRow{PageID: l.PageID}
		r.Title, r.FullTitle = shownTitle(readable.Clean(l.Title))
		return r
	}
	p.SearchText = searchText(doc.SearchText() + "\n" + notes)
	var b bytes.Buffer
	err = pageTmpl.Execute(&b, map[string]any{
		"Title": title, "Notes": notes, "Event": p.Event, "Source": p.Source, "Summary0": p.Summary,
		"Summary": sum, "Doc": doc, "HTML": template.HTML(doc.HTML), // readable.SafeHTML's output only
		"Link": link, "Lead": lead, "Generation": p.Generation, "Older": shown(p.Older), "Newer": shown(p.Newer),
	})
	return b.Bytes(), err
}

// override is the page's title (an edited one when a page document has
// one) and its notes.
func (s *Service) override(ctx context.Context, ev tidemark.Event) (title, notes string, err error) {
	title = readable.Clean(ev.Title)
	if title == "" {
		title = ev.ItemKey
	}
	if s.Overrides == nil {
		return title, "", nil
	}
	o, ok, err := s.Overrides.PageOverride(ctx, ev.ID)
	if err != nil || !ok {
		return title, "", err
	}
	// An editor's text is cleaned as upstream text is: a bidirectional
	// override would reverse it on the wiki.
	if t := strings.TrimSpace(readable.Clean(o.Title)); t != "" {
		title = t
	}
	return title, readable.Clean(o.Notes), nil
}
