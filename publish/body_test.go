package publish_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A commit's change page shows its body as it was written: paragraphs
// (hard-wrapped lines flow together), lines that start with "- ", "* " or
// "1. " as the items of a list, and trailers one a line; every line
// is text, however hostile.
func TestCommitBodyReadable(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		f := mustFixture(t, b, mem.New())
		msg := []string{"Add bullet handling", "",
			"This paragraph explains the change. It is hard-wrapped", "at a narrow width.", "",
			"- one", "- two", "  continued", "- three", "",
			"Steps:", "1. first step", "2. second <script>alert(1)</script>", "",
			"3) third", "4) fourth", "",
			"* star \x1b[31mred\x1b[0m", "* another", "",
			"Signed-off-by: Ann <ann@example.com>", "Reviewed-by: Bob <bob@example.com>"}
		ev := "commit c1\nauthor Ann <ann@example.com> 2026-01-02T03:04:05Z\n\n    " + strings.Join(msg, "\n    ") + "\n"
		f.settle(t, f.src, tidemark.Item{Key: "c1", Title: msg[0], Evidence: []byte(ev)})
		f.mustSummarizeAndPublish(t)
		key := "changes/" + mustPageOf(t, f, "c1") + ".html"
		o, err := f.objs.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		page := string(o.Body)
		for _, want := range []string{
			"<p>This paragraph explains the change. It is hard-wrapped at a narrow width.</p>",
			"<ul>\n<li>one</li>\n<li>two continued</li>\n<li>three</li>\n</ul>",
			"<p>Steps:</p>\n<ol>\n<li>first step</li>\n<li>second &lt;script&gt;alert(1)&lt;/script&gt;</li>\n</ol>",
			"<ol start=\"3\">\n<li>third</li>\n<li>fourth</li>\n</ol>",
			"<ul>\n<li>star red</li>\n<li>another</li>\n</ul>",
			"<p>Signed-off-by: Ann &lt;ann@example.com&gt;<br>Reviewed-by: Bob &lt;bob@example.com&gt;</p>",
		} {
			if !strings.Contains(page, want) {
				t.Errorf("the page does not show\n%s\nin:\n%s", want, page[strings.Index(page, "<h1>"):strings.Index(page, "<footer>")])
			}
		}
		mustInertHTML(t, key, o.Body)
		if strings.Contains(page, "\x1b") {
			t.Error("the page shows an escape character")
		}
	})
}
