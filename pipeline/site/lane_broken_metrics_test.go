package site_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/pipeline/site"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/web"
)

// A lane that cannot deliver (here: stored naming tidemark's own
// variable, so it sends nothing and its intents pile up) is on /metrics,
// for an alert: broken 1, and its health; a lane that can, broken 0.
func TestTheDaemonsMetricsSayALaneIsBroken(t *testing.T) {
	ctx := context.Background()
	cfg := pipeline.Defaults()
	cfg.Home = t.TempDir()
	p := mustOpen(t, cfg)
	for name, env := range map[string]string{"badenv": "TIDEMARK_DB", "hooks": "TIDEMARK_TEST_HOOK_SECRET"} {
		lane := outbox.LaneConfig{Name: name, Provider: "webhook",
			Settings: map[string]string{"url": "https://hooks.example/x", "secret_env": env}}
		if _, err := p.DB().Outbox().AddLane(ctx, sqlstore.NewLane{LaneConfig: lane}); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TIDEMARK_TEST_HOOK_SECRET", "s")
	code, body := mustGet(t, site.Metrics(p, web.NewPipelineMetrics(), nil), "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	for _, want := range []string{
		`tidemark_outbox_lane_broken{lane="badenv"} 1`,
		`tidemark_outbox_lane_broken{lane="hooks"} 0`,
		`tidemark_outbox_lane_health{health="broken",lane="badenv"} 1`,
		`tidemark_outbox_lane_health{health="ok",lane="hooks"} 1`,
		"tidemark_database_up 1",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(body, "lane"))
		}
	}
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
