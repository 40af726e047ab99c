// Package extractive is the default summarizer: it needs no network, is
// deterministic (the same evidence always yields the same text), and picks
// the lines a reader wants first. For a git commit: the subject, the first
// paragraph of the body and the diffstat headline with the most-changed
// files; for other evidence: the title and the first meaningful lines.
package extractive

import (
	"bufio"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/summarize"
)

const (
	// Model is the name extractive drafts carry.
	Model = "extractive"
	// PromptVersion changes whenever the extraction rules change, so
	// summaries of the old rules are superseded, not conflicted.
	PromptVersion = "extractive-v1"

	maxLines     = 8
	maxBodyChars = 600
	maxFiles     = 3
)

// Summarizer is the extractive summarizer.
type Summarizer struct{}

var _ summarize.Summarizer = Summarizer{}

// Identity implements summarize.Summarizer.
func (Summarizer) Identity() (string, string) { return Model, PromptVersion }

// Summarize implements summarize.Summarizer.
func (Summarizer) Summarize(ctx context.Context, ev tidemark.Event, evidence []byte) (summarize.Draft, error) {
	var text string
	if strings.HasPrefix(string(evidence), "commit ") {
		text = commit(string(evidence))
	}
	if text == "" {
		text = generic(ev.Title, string(evidence))
	}
	if text == "" {
		return summarize.Draft{}, tidemark.Invalidf("evidence", ev.ID, "has nothing to summarize")
	}
	return summarize.Draft{Text: truncate(text, summarize.MaxTextBytes), Model: Model, PromptVersion: PromptVersion}, nil
}

// commit summarizes the git fetcher's canonical commit evidence.
func commit(ev string) string {
	var (
		msg       []string
		author    string
		statHead  string
		files     []fileStat
		inMessage bool
		inStat    bool
	)
	sc := bufio.NewScanner(strings.NewReader(ev))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "    ") && !inStat:
			inMessage = true
			msg = append(msg, strings.TrimPrefix(line, "    "))
		case strings.HasPrefix(line, "author ") && !inMessage:
			author = authorName(strings.TrimPrefix(line, "author "))
		case inMessage && strings.Contains(line, " files changed, ") || inMessage && strings.Contains(line, " file changed, "):
			statHead, inStat = line, true
		case inStat && line != "":
			if f, ok := parseStat(line); ok {
				files = append(files, f)
			}
		}
	}
	if len(msg) == 0 {
		return ""
	}
	subject := strings.TrimSpace(msg[0])
	var b strings.Builder
	b.WriteString(subject)
	if p := firstParagraph(msg[1:]); p != "" {
		b.WriteString("\n\n" + truncate(p, maxBodyChars))
	}
	if statHead != "" {
		sort.SliceStable(files, func(i, j int) bool { return files[i].lines > files[j].lines })
		var names []string
		for i, f := range files {
			if i == maxFiles {
				break
			}
			names = append(names, f.path)
		}
		b.WriteString("\n\n" + strings.TrimSpace(statHead))
		if len(names) > 0 {
			more := ""
			if len(files) > maxFiles {
				more = fmt.Sprintf(" and %d more", len(files)-maxFiles)
			}
			b.WriteString("; mostly " + strings.Join(names, ", ") + more)
		}
		b.WriteString(".")
	}
	if author != "" {
		b.WriteString("\n\nBy " + author + ".")
	}
	return b.String()
}

type fileStat struct {
	path  string
	lines int
}

func parseStat(line string) (fileStat, bool) {
	parts := strings.SplitN(line, "\t", 3)
	if len(parts) != 3 {
		return fileStat{}, false
	}
	a, _ := strconv.Atoi(parts[0]) // "-" for binary files counts 0
	d, _ := strconv.Atoi(parts[1])
	return fileStat{path: parts[2], lines: a + d}, true
}

func authorName(s string) string {
	if i := strings.Index(s, " <"); i >= 0 {
		return s[:i]
	}
	return s
}

// firstParagraph is the first run of non-empty lines, joined.
func firstParagraph(lines []string) string {
	var para []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			if len(para) > 0 {
				break
			}
			continue
		}
		para = append(para, l)
	}
	return strings.Join(para, " ")
}

// generic is the title and the first meaningful lines of any evidence.
func generic(title, ev string) string {
	var out []string
	if t := strings.TrimSpace(title); t != "" {
		out = append(out, t)
	}
	seen := map[string]bool{strings.TrimSpace(title): true}
	for _, l := range strings.Split(ev, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || seen[l] || !utf8.ValidString(l) {
			continue
		}
		seen[l] = true
		out = append(out, truncate(l, 200))
		if len(out) == maxLines {
			break
		}
	}
	if len(out) == 0 {
		return ""
	}
	if len(out) == 1 {
		return out[0]
	}
	return out[0] + "\n\n" + strings.Join(out[1:], "\n")
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return summarize.Cut(s, n-len("…")) + "…"
}
