package ntfy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// fakeNtfy keeps what is published as ntfy does, the message trimmed of
// surrounding white space, and answers the poll API, filtered by message=
// as ntfy filters it (the stored text, exactly).
func fakeNtfy(t *testing.T) *httptest.Server {
	var msgs []map[string]any
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{topic}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m := map[string]any{"id": fmt.Sprintf("m%d", len(msgs)+1), "time": 1767225600 + len(msgs), "event": "message",
			"topic": r.PathValue("topic"), "message": strings.TrimSpace(string(b))}
		msgs = append(msgs, m)
		_ = json.NewEncoder(w).Encode(m)
	})
	mux.HandleFunc("GET /{topic}/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		for _, m := range msgs {
			if m["topic"] != r.PathValue("topic") {
				continue
			}
			if q := r.URL.Query().Get("message"); q != "" && q != m["message"] {
				continue
			}
			_ = json.NewEncoder(w).Encode(m)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// ntfy trims the message it keeps: a body with white space around it is
// still found by the listing (on a fingerprint of the trimmed body, the
// join's key for both sides) and by the probe.
func TestATrimmedMessageIsStillOurs(t *testing.T) {
	ctx := context.Background()
	srv := fakeNtfy(t)
	p, err := ntfy.New(ntfy.Config{BaseURL: srv.URL, Topics: []string{"alerts"}})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("  Deploy finished: all green  \n")
	if _, err := p.Post(ctx, provider.Write{Target: "alerts", Body: body}); err != nil {
		t.Fatal(err)
	}
	fp, ok := any(p).(provider.Fingerprinter)
	if !ok {
		t.Fatal("ntfy trims what it keeps, yet the provider joins on the exact body")
	}
	pg, err := p.ListOwn(ctx, provider.ListQuery{})
	if err != nil || len(pg.Writes) != 1 {
		t.Fatalf("listing %+v %v", pg, err)
	}
	if pg.Writes[0].BodySHA256 != fp.Fingerprint(body) {
		t.Fatal("the listed message does not join the body as sent")
	}
	if fp.Fingerprint([]byte("Deploy finished: all green")) == fp.Fingerprint([]byte("Deploy finished: all  green")) {
		t.Fatal("white space inside the message must still count")
	}
	pr, err := p.Probe(ctx, provider.Write{Target: "alerts", Body: body})
	if err != nil || !pr.Found {
		t.Fatalf("probe for the body as sent: %+v %v", pr, err)
	}
}
