package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
	"github.com/tidemark/tidemark/web"
)

// The outbox's lane table fits a desktop's width with every state's
// column, a lane failing with a long problem (an intent's ID, a URL: words
// that do not break) and a lane name as long as names are, and stacks as
// cards on a phone: nothing is cut off at the right.
func TestBrowserOutboxFits(t *testing.T) {
	ctx := mustBrowser(t)
	dir := artifactsDir(t)
	bg := context.Background()
	env := sqltest.NewEnv(17)
	dbURL := sqltest.Backends()[0].NewURL(t)
	db := sqltest.MustOpenURL(t, dbURL, env)
	cfg := pipeline.Defaults()
	cfg.Home, cfg.Database = t.TempDir(), dbURL
	p, err := pipeline.Open(bg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ob := db.Outbox()
	for _, name := range []string{"down", "release-notifications-for-the-platform-team"} {
		if _, err := ob.AddLane(bg, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: name, Provider: "webhook",
			Settings: map[string]string{"url": "https://hooks.example.org/T000/B000", "secret": "s3cret-for-the-test"}, MinGap: tidemark.Duration(2 * time.Second)}}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := ob.Draft(bg, outbox.Draft{Lane: name, Target: "#changes", Body: fmt.Sprintf("change %d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	problem := "the write of intent 01M8TRVZT802GQWPFMQT9HJEWK got no answer: Post \"https://hooks.example.org/T000/B000/" +
		strings.Repeat("x", 80) + "\": dial tcp 127.0.0.1:29999: connect: connection refused"
	for range 2 {
		if err := ob.RecordLaneFailure(bg, "down", env.Clock.Now(), problem); err != nil {
			t.Fatal(err)
		}
	}
	token, _, err := db.Auth().CreateToken(bg, "ops")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&web.Server{Ingest: db.Ingest(), Outbox: ob, OutboxOps: p, Auth: db.Auth()}).Handler())
	t.Cleanup(srv.Close)

	mustOpen(t, ctx, srv.URL+"/status/outbox")
	mustSignIn(t, ctx, token, "h1")
	if text := mustOpen(t, ctx, srv.URL+"/status/outbox"); !strings.Contains(text, "failing") {
		t.Fatalf("the outbox page does not show the failing lane:\n%s", text)
	}
	mustWrapLongText(t, ctx, dir, "outbox-failing", `td[data-label=pending], td[data-label=landed], td[data-label=collision]`)
}
