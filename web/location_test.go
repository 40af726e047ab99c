package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A source stored with a credential in its location (by an older
// tidemark) is shown without it by the console's pages and the API.
func TestConsoleAndAPIHideALocationsCredential(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		c, _, db := mustConsole(t, b)
		if _, err := db.Ingest().AddSource(context.Background(), ingest.NewSource{Name: "old", Kind: "feed",
			Location: "https://example.org/feed?token=SEKRET-qtok-5", Interval: time.Minute, RetryBudget: 3}); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/status", "/status/sources/old", "/status/sources/old/remove", "/api/sources", "/api/sources/old"} {
			r := c.get(path)
			if r.Code != 200 || strings.Contains(r.Body, "SEKRET") {
				t.Errorf("%s: %d\n%s", path, r.Code, r.Body)
			}
		}
		mustContain(t, "source page", c.get("/status/sources/old"), "example.org/feed?token=•••")
	})
}
