package provider_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox/provider"
)

// Every provider's client (HTTPDefaults fills or adopts it) reads with its
// token only at the origin the token was given for: a read redirected to
// another port of the same host name carries no Authorization.
func TestProviderReadsKeepTheirTokenOnItsOrigin(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/caught", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	for name, given := range map[string]*http.Client{"default": nil, "given": {Timeout: time.Minute}} {
		client := given
		var clk clock.Clock
		provider.HTTPDefaults(&client, &clk)
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/repos/o/r/issues/1", nil)
		req.Header.Set("Authorization", "Bearer SEKRET-ghr-61")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if n := leaked.Swap(0); n != 0 {
			t.Errorf("%s client: the other port was sent the token", name)
		}
		if given != nil && given.CheckRedirect != nil {
			t.Errorf("%s client: the caller's client was changed", name)
		}
	}
}
