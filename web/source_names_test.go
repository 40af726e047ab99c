package web_test

import (
	"context"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A source stored under a name that is refused today (an older version
// accepted it) is still listed with a link that reaches its page, and can
// be renamed away from there: a name that reads as an escape, a dot
// segment no URL path can carry (its page is reached by the source's ID),
// a bidi override, a space.
func TestEveryStoredNameReachesItsPage(t *testing.T) {
	c, _, db := mustConsole(t, sqltest.Backends()[0])
	ctx := context.Background()
	for i, legacy := range []string{"a%2Fb", "..", ".", "50% off", "x\u202ey", "two words"} {
		src, err := db.Ingest().AddSource(ctx, ingest.NewSource{Name: "legacy", Kind: "feed", Location: "https://example.org/legacy",
			Interval: time.Minute, RetryBudget: 3})
		if err != nil {
			t.Fatal(err)
		}
		// Straight into the table: no rule of today lets it in.
		if _, err := db.SQL().ExecContext(ctx, `UPDATE sources SET name = $1 WHERE id = $2`, legacy, src.ID); err != nil {
			t.Fatal(err)
		}
		r := c.get("/status")
		link := regexp.MustCompile(`href="(/status/sources/[^"]*)">` + regexp.QuoteMeta(html.EscapeString(legacy)) + `</a>`).FindStringSubmatch(r.Body)
		if link == nil {
			t.Fatalf("%q: no link on /status:\n%s", legacy, r.Body)
		}
		page := c.get(html.UnescapeString(link[1]))
		if page.Code != 200 || !strings.Contains(page.Body, "<h1>"+html.EscapeString(legacy)+" <span") {
			t.Fatalf("%q: its link %s gives %d:\n%s", legacy, link[1], page.Code, page.Body)
		}
		rename := regexp.MustCompile(`action="([^"]*/rename)"`).FindStringSubmatch(page.Body)
		if rename == nil {
			t.Fatalf("%q: no rename form on its page:\n%s", legacy, page.Body)
		}
		fixed := "fixed-" + string(rune('a'+i))
		mustRedirect(t, "rename "+legacy, c.form(html.UnescapeString(rename[1]), url.Values{"name": {fixed}}), "/status/sources/"+fixed)
		if got, err := db.Ingest().Source(ctx, fixed); err != nil || got.ID != src.ID {
			t.Fatalf("%q renamed: %+v %v", legacy, got, err)
		}
	}
}
