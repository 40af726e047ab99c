package provider_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providertest"
)

// wrapped hides a pooled transport behind another RoundTripper, so the
// write client cannot give it a fresh connection per write: only the
// one-shot body keeps the transport from sending the write again.
type wrapped struct{ http.RoundTripper }

func TestWriteClientNeverReplaysOnAKeptAliveConnection(t *testing.T) {
	var (
		mu     sync.Mutex
		writes int
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /warm", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("POST /hook", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		writes++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	})
	srv, drop := providertest.NewDropServer(t, mux)
	drop.DropEvery(1)
	pooled := &http.Transport{MaxIdleConnsPerHost: 1}
	t.Cleanup(pooled.CloseIdleConnections)
	for name, base := range map[string]*http.Client{
		"own transport":     {Transport: pooled},
		"opaque transport":  {Transport: wrapped{pooled}},
		"default transport": nil,
	} {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			writes = 0
			mu.Unlock()
			c := base
			if c == nil {
				c = http.DefaultClient
			}
			// Leave a kept-alive connection in the pool.
			resp, err := c.Get(srv.URL + "/warm")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/hook", bytes.NewReader([]byte(`{"x":1}`)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Idempotency-Key", "tm-1") // what makes net/http replay a POST
			_, err = provider.NewWriteClient(base).Post(context.Background(), time.Now, req)
			var unknown *provider.UnknownError
			if !errors.As(err, &unknown) {
				t.Fatalf("a lost answer gave %v; want an outcome unknown", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if writes != 1 {
				t.Fatalf("the receiver got the write %d times", writes)
			}
		})
	}
}

func TestWriteClientRefusesABodilessWrite(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/hook", nil)
	req.Header.Set("Idempotency-Key", "tm-1")
	if _, err := provider.NewWriteClient(nil).Post(context.Background(), time.Now, req); err == nil {
		t.Fatal("a bodiless write was sent; with an Idempotency-Key it would be replayable")
	}
}

func TestTheReadPathRefusesWrites(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/hook", bytes.NewReader([]byte("x")))
	if _, _, err := provider.GetJSON(context.Background(), http.DefaultClient, time.Now, req, nil); !errors.Is(err, provider.ErrNotARead) {
		t.Fatalf("a POST through the read path: %v", err)
	}
}

// A read the remote asks to wait for (429, or 503 with a hint, or
// GitHub's rate-limit 403) says how long, read as a write's wait is.
func TestARefusedReadSaysHowLongToWait(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		status int
		header http.Header
		body   string
		want   time.Duration
	}{
		{429, http.Header{"Retry-After": {"60"}}, "", time.Minute},
		{503, http.Header{"Retry-After": {"120"}}, "", 2 * time.Minute},
		{429, nil, `{"errcode":"M_LIMIT_EXCEEDED","retry_after_ms":2500}`, 2500 * time.Millisecond},
		{429, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"2026-12-01T12:05:00Z"}}, "", 5 * time.Minute},
		{403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {fmt.Sprint(now.Add(10 * time.Minute).Unix())}}, "", 10 * time.Minute},
		{429, nil, "", 0}, // no hint: the caller's own backoff
		{503, nil, "", 0},
		{404, http.Header{"Retry-After": {"60"}}, "", 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range tc.header {
				w.Header()[k] = v
			}
			w.WriteHeader(tc.status)
			fmt.Fprint(w, tc.body)
		}))
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		_, _, _, err := provider.GetBody(context.Background(), srv.Client(), func() time.Time { return now }, req)
		srv.Close()
		var se *provider.StatusError
		if !errors.As(err, &se) || se.Wait != tc.want {
			t.Errorf("%d %v %s: %v, want a wait of %v", tc.status, tc.header, tc.body, err, tc.want)
		}
	}
}
