package publish_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/objstore"
	"github.com/tidemark/tidemark/objstore/mem"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A source stored with a credential in its location (before such
// locations were refused) keeps it off the public wiki: its card, its
// feed, its change pages and the index show the location without it.
func TestWikiHidesASourceLocationsCredentials(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		objs := mem.New()
		f := mustFixture(t, b, objs)
		src, err := f.db.Ingest().AddSource(ctx, ingest.NewSource{Name: "private", Kind: "feed",
			Location: "https://feeds.example/private.atom?category=go&token=SEKRET-qtok-5", Interval: time.Hour, RetryBudget: 3})
		if err != nil {
			t.Fatal(err)
		}
		f.settle(t, src, tidemark.Item{Key: "e1", Title: "One", Evidence: []byte("one")})
		f.mustSummarizeAndPublish(t)
		n := 0
		if err := objs.List(ctx, "", func(info objstore.Info) error {
			o, err := objs.Get(ctx, info.Key)
			if err != nil {
				return err
			}
			n++
			if strings.Contains(string(o.Body), "SEKRET") {
				t.Errorf("%s shows the location's token", info.Key)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		wos, err := f.st.WikiObjects(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, wo := range wos {
			if strings.Contains(fmt.Sprintf("%+v", wo), "SEKRET") {
				t.Errorf("the wiki's record of %s holds the location's token: %+v", wo.Key, wo)
			}
		}
		card, err := objs.Get(ctx, "sources/"+src.ID+".html")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(card.Body), "feeds.example/private.atom?category=go&amp;token=•••") {
			t.Errorf("the card does not show the location without its token:\n%s", card.Body)
		}
		if n < 4 {
			t.Fatalf("only %d objects written", n)
		}
	})
}
