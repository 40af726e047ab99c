package openai_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/summarize"
	"github.com/tidemark/tidemark/summarize/openai"
)

// The API key goes only to the endpoint's origin: a 307 to another port of
// the same host name is followed without it, with the default client and
// with one the caller gives.
func TestAPIKeyStaysOnTheEndpointsOrigin(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/caught"+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	for name, hc := range map[string]*http.Client{"default": nil, "given": {Timeout: time.Minute}} {
		s, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "SEKRET-openai-70", Model: "m", HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = s.Summarize(context.Background(), summarize.Input{Event: tidemark.Event{ID: "e"}, Evidence: []byte("x")})
		if n := leaked.Swap(0); n != 0 {
			t.Errorf("%s client: the other port was sent the API key %d time(s)", name, n)
		}
	}
}
