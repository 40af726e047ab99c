package site_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/gittest"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/pipeline/site"
)

// ServeMetrics serves the daemon's /metrics on Config.MetricsAddr, as
// `tidemark run` does (it calls this), counting the pipeline's publishing,
// until its context ends: what a program embedding tidemark calls beside
// Run.
func TestServeMetricsServesOnMetricsAddr(t *testing.T) {
	cfg := pipeline.Defaults()
	cfg.Home, cfg.MetricsAddr = t.TempDir(), "127.0.0.1:0"
	p := mustOpen(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	addr, wait, err := site.ServeMetrics(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunOnce(context.Background(), pipeline.OnceOptions{Track: []string{gittest.Repo(t, "first change", "second change")}}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "tidemark_publish_published_total 2") {
		t.Fatalf("GET /metrics: %d %.2000s", resp.StatusCode, body)
	}
	cancel()
	if err := wait(); err != nil {
		t.Fatalf("ServeMetrics after its context ended: %v", err)
	}
	if _, err := http.Get("http://" + addr.String() + "/metrics"); err == nil {
		t.Errorf("/metrics still served after its context ended")
	}
}
