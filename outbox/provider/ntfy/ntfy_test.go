package ntfy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/provider/ntfy"
)

// A message longer than ntfy takes is refused before it is sent (ntfy
// would make it an attachment); nothing reaches the server.
func TestAMessageOverTheLimitIsRefusedUnsent(t *testing.T) {
	posts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts++ }))
	defer srv.Close()
	p, err := ntfy.New(ntfy.Config{BaseURL: srv.URL, MaxBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Post(context.Background(), provider.Write{Target: "alerts", Body: []byte(strings.Repeat("x", 11))})
	var rej *provider.RejectedError
	if !errors.As(err, &rej) || posts != 0 {
		t.Fatalf("an oversized message: %v, %d posts", err, posts)
	}
}

func TestSettingsAreChecked(t *testing.T) {
	for _, s := range []map[string]string{
		{"topics": "ok,not a topic!"},
		{"max_bytes": "-1"},
		{"cache_duration": "forever"},
		{"token_env": "TM_NTFY_UNSET_VARIABLE"},
	} {
		c, err := ntfy.FromSettings(s)
		if err == nil {
			_, err = ntfy.New(c)
		}
		if !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("settings %v: %v", s, err)
		}
	}
	if _, err := ntfy.FromSettings(map[string]string{}); err != nil {
		t.Fatalf("a public topic needs no token: %v", err)
	}
}
