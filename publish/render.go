package publish

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"strings"
	"time"
)

// The wiki is static HTML: no JavaScript, relative links only, so it can be
// served from the directory or the bucket as it stands. Everything shown is
// escaped by html/template (summary text is text, never markup; URLs with
// unsafe schemes are neutralized).

const style = `body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#222}
nav{font-size:.9rem;margin-bottom:1rem}nav a{color:#05c}a{color:#05c}
h1{font-size:1.5rem;line-height:1.3}.meta{color:#666;font-size:.9rem}
.summary p{white-space:pre-line}aside{border-left:3px solid #ccc;padding-left:1rem;color:#444}
footer{margin-top:2rem;color:#888;font-size:.8rem;word-break:break-all}
table{border-collapse:collapse;width:100%}td{padding:.25rem .5rem;vertical-align:top}td.when{white-space:nowrap;color:#666}
code{font-size:.9em}`

var (
	funcs = template.FuncMap{
		"date":      func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") },
		"shortHash": func(s string) string { return short(s, 12) },
	}
	pageTmpl = wikiTemplate("page", `{{.Title}} · {{.Source.Name}}`, `<nav><a href="../index.html">tidemark</a> › <a href="../sources/{{.Source.ID}}.html">{{.Source.Name}}</a></nav>
<main>
<h1>{{.Title}}</h1>
<p class="meta">{{date .Event.OccurredAt}} UTC · <code>{{shortHash .Event.ItemKey}}</code>{{if .Event.URL}} · <a href="{{.Event.URL}}" rel="nofollow noopener">upstream</a>{{end}}</p>
<div class="summary">
{{range .Paragraphs}}<p>{{.}}</p>
{{end}}</div>
{{if .Notes}}<aside><p>{{.Notes}}</p></aside>
{{end}}</main>
<footer>Summary {{.Summary.ID}} by {{.Summary.Model}} (prompt {{.Summary.PromptVersion}}) of evidence sha256:{{.Summary.EvidenceHash}}, revision {{.Event.Revision}}.{{if .Generation}} Publication generation {{.Generation}}.{{end}}</footer>
`)
	cardTmpl = wikiTemplate("card", `{{.Source.Name}} · tidemark`, `<nav><a href="../index.html">tidemark</a> › {{.Source.Name}}</nav>
<main>
<h1>{{.Source.Name}}</h1>
<p class="meta">{{.Source.Kind}} source · <code>{{.Source.Location}}</code></p>
{{if .Pages}}<table>
{{range .Pages}}<tr><td class="when">{{date .OccurredAt}}</td><td><a href="../changes/{{.PageID}}.html">{{.Title}}</a></td></tr>
{{end}}</table>{{if .More}}
<p class="meta">Showing the newest {{len .Pages}} changes.</p>{{end}}
{{else}}<p>No published changes yet.</p>
{{end}}</main>
`)
	indexTmpl = wikiTemplate("index", `tidemark`, `<main>
<h1>tidemark</h1>
<h2>Sources</h2>
{{if .Sources}}<table>
{{range .Sources}}<tr><td><a href="sources/{{.ID}}.html">{{.Name}}</a></td><td>{{.Kind}}</td><td>{{.Pages}} changes</td></tr>
{{end}}</table>
{{else}}<p>No published changes yet.</p>
{{end}}<h2>Newest changes</h2>
<table>
{{range .Recent}}<tr><td class="when">{{date .OccurredAt}}</td><td><a href="changes/{{.PageID}}.html">{{.Title}}</a></td><td>{{index $.SourceNames .SourceID}}</td></tr>
{{end}}</table>
</main>
`)
)

// wikiTemplate wraps a body in the document every wiki object shares: the
// head (with the publication generation, when there is one) and the style.
func wikiTemplate(name, title, body string) *template.Template {
	return template.Must(template.New(name).Funcs(funcs).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="tidemark">{{if .Generation}}
<meta name="tidemark-generation" content="{{.Generation}}">{{end}}
<title>` + title + `</title>
<style>` + style + `</style>
</head>
<body>
` + body + `</body>
</html>
`))
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func paragraphs(text string) []string {
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// renderPage renders a change page for a plan.
func (s *Service) renderPage(ctx context.Context, p Plan) ([]byte, error) {
	title := p.Event.Title
	if title == "" {
		title = p.Event.ItemKey
	}
	var notes string
	if s.Overrides != nil {
		o, ok, err := s.Overrides.PageOverride(ctx, p.Event.ID)
		if err != nil {
			return nil, fmt.Errorf("page %s overrides: %w", p.PageID, err)
		}
		if ok {
			if o.Title != "" {
				title = o.Title
			}
			notes = o.Notes
		}
	}
	var b bytes.Buffer
	err := pageTmpl.Execute(&b, map[string]any{
		"Title": title, "Notes": notes, "Event": p.Event, "Source": p.Source, "Summary": p.Summary,
		"Paragraphs": paragraphs(p.Summary.Text), "Generation": p.Generation,
	})
	return b.Bytes(), err
}

// maxCardPages and maxIndexPages bound the listings.
const (
	maxCardPages  = 500
	maxIndexPages = 100
)

func (s *Service) renderCard(ctx context.Context, src SourceInfo) (func(gen int64) ([]byte, error), error) {
	pages, err := s.Store.PagesOf(ctx, src.ID, maxCardPages+1)
	if err != nil {
		return nil, err
	}
	more := len(pages) > maxCardPages
	if more {
		pages = pages[:maxCardPages]
	}
	return func(gen int64) ([]byte, error) {
		var b bytes.Buffer
		err := cardTmpl.Execute(&b, map[string]any{"Source": src, "Pages": pages, "More": more, "Generation": gen})
		return b.Bytes(), err
	}, nil
}

func (s *Service) renderIndex(ctx context.Context, sources []SourceEntry) (func(gen int64) ([]byte, error), error) {
	recent, err := s.Store.Recent(ctx, maxIndexPages)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, src := range sources {
		names[src.ID] = src.Name
	}
	return func(gen int64) ([]byte, error) {
		var b bytes.Buffer
		err := indexTmpl.Execute(&b, map[string]any{"Sources": sources, "Recent": recent, "SourceNames": names, "Generation": gen})
		return b.Bytes(), err
	}, nil
}
