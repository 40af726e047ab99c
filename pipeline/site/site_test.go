package site_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/gittest"
	"github.com/tidemark/tidemark/pipeline"
	"github.com/tidemark/tidemark/pipeline/site"
	"github.com/tidemark/tidemark/publish"
	"github.com/tidemark/tidemark/web"
)

func mustOpen(t *testing.T, cfg pipeline.Config) *pipeline.Pipeline {
	t.Helper()
	p, err := pipeline.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// mustBound opens a pipeline on a fresh home, its wiki bound to the
// home's store.
func mustBound(t *testing.T) (*pipeline.Pipeline, pipeline.Config) {
	t.Helper()
	cfg := pipeline.Defaults()
	cfg.Home = t.TempDir()
	p := mustOpen(t, cfg)
	if _, err := p.BindStore(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p, cfg
}

func mustGet(t *testing.T, h http.Handler, path, token string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

// The site serves every console the pipeline has operations for, behind
// the database's tokens, and the wiki in front.
func TestNewServesEveryConsole(t *testing.T) {
	ctx := context.Background()
	p, _ := mustBound(t)
	s, err := site.New(ctx, p, site.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	token, _, err := p.DB().Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/status":             "Add a source", // the source writes are wired
		"/status/outbox":      "Add a lane",
		"/console/migrations": "Start",
		"/console/docs":       "pages",
		"/metrics":            "tidemark_database_up 1",
	} {
		code, body := mustGet(t, h, path, token)
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, want 200 with %q:\n%.600s", path, code, want, body)
		}
		if code, _ := mustGet(t, h, path, ""); code == http.StatusOK {
			t.Errorf("GET %s without a token: 200", path)
		}
	}
	// Nothing is published yet: the public wiki answers, without a token,
	// that it has no index.
	if code, _ := mustGet(t, h, "/"+publish.IndexKey, ""); code != http.StatusNotFound {
		t.Errorf("GET the wiki's index before anything is published: %d, want 404", code)
	}
	if code, _ := mustGet(t, h, "/healthz", ""); code != http.StatusOK {
		t.Errorf("GET /healthz: %d", code)
	}
}

func TestNewRefusesABadHost(t *testing.T) {
	cfg := pipeline.Defaults()
	cfg.Home = t.TempDir()
	p := mustOpen(t, cfg)
	for _, h := range []string{"", "a b", "http://x/"} {
		if _, err := site.New(context.Background(), p, site.Options{Hosts: []string{h}}); !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("host %q: %v, want invalid", h, err)
		}
	}
}

// A server over a store that is not the database's wiki would show another
// wiki: it is refused, and nothing is bound to the store it was given.
func TestNewRefusesAnotherStore(t *testing.T) {
	ctx := context.Background()
	p, cfg := mustBound(t)
	p.Close()
	cfg.Store = filepath.Join(t.TempDir(), "elsewhere")
	other := mustOpen(t, cfg)
	_, err := site.New(ctx, other, site.Options{})
	var mismatch *publish.StoreMismatchError
	if !errors.As(err, &mismatch) {
		t.Fatalf("site over another store: %v, want a store mismatch", err)
	}
}

// The daemon's metrics server answers /metrics with what only the process
// counts besides the database's view, and nothing else.
func TestMetrics(t *testing.T) {
	cfg := pipeline.Defaults()
	cfg.Home = t.TempDir()
	p := mustOpen(t, cfg)
	m := web.NewPipelineMetrics()
	h := site.Metrics(p, m, nil)
	code, body := mustGet(t, h, "/metrics", "")
	if code != http.StatusOK || !strings.Contains(body, "tidemark_database_up 1") || !strings.Contains(body, "tidemark_publish_published_total") {
		t.Errorf("GET /metrics: %d\n%.800s", code, body)
	}
	if code, _ := mustGet(t, h, "/status", ""); code != http.StatusNotFound {
		t.Errorf("GET /status on the metrics server: %d, want 404", code)
	}
}

// Serve answers until its context ends, and then stops cleanly (nil).
func TestServeStopsCleanlyWhenItsContextEnds(t *testing.T) {
	ln, err := web.Listen("--addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- site.Serve(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "up") }))
	}()
	res, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "up" {
		t.Fatalf("answer %q", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after its context ended: %v, want nil", err)
	}
}

// The site publishes (Publish now, POST /api/publish) and shows on its
// /metrics what its process published, as the daemon's metrics do.
func TestSiteMetricsCountWhatItPublishes(t *testing.T) {
	ctx := context.Background()
	p, _ := mustBound(t)
	s, err := site.New(ctx, p, site.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	token, _, err := p.DB().Auth().CreateToken(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	src, _, err := p.TrackRepo(ctx, gittest.Repo(t, "one", "two"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunSource(ctx, src.Name, 5, nil); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/api/publish", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST /api/publish: %d %s", rec.Code, rec.Body)
	}
	code, body := mustGet(t, h, "/metrics", token)
	for _, want := range []string{"tidemark_publish_published_total 2", "tidemark_publish_failures_total 0", "tidemark_publish_sweep_duration_seconds_count 0"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /metrics after publishing two pages: %d, lacks %q", code, want)
		}
	}
}
