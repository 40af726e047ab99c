package matrix_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/provider/matrix"
)

// The send's transaction id is the intent's key, so a resend is the same
// transaction; a send without a key is refused unsent, since it would not
// be idempotent.
func TestTheTransactionIDIsTheIntentsKey(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.EscapedPath())
		_, _ = w.Write([]byte(`{"event_id":"$1"}`))
	}))
	defer srv.Close()
	p, err := matrix.New(matrix.Config{HomeserverURL: srv.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	w := provider.Write{Target: "!r:example.org", Body: []byte("hi"), IdempotencyKey: "tm-1"}
	for range 2 {
		if _, err := p.Post(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}
	want := "PUT /_matrix/client/v3/rooms/%21r:example.org/send/m.room.message/tm-1"
	if len(paths) != 2 || paths[0] != want || paths[1] != want {
		t.Fatalf("sends %v, want twice %s", paths, want)
	}
	w.IdempotencyKey = ""
	var rej *provider.RejectedError
	if _, err := p.Post(context.Background(), w); !errors.As(err, &rej) || len(paths) != 2 {
		t.Fatalf("a send without a key: %v (%d sends)", err, len(paths))
	}
}
