package matrix_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// A message carries its HTML rendering beside the text while both fit in
// one event, and the text alone when they would not.
func TestAMessageCarriesItsHTMLWhileItFits(t *testing.T) {
	var got []map[string]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c map[string]string
		_ = json.NewDecoder(r.Body).Decode(&c)
		got = append(got, c)
		_, _ = w.Write([]byte(`{"event_id":"$1"}`))
	}))
	defer srv.Close()
	p, err := matrix.New(matrix.Config{HomeserverURL: srv.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"Title & co\n\nhttps://wiki.example/p/1", strings.Repeat("<>", 20000)} {
		if _, err := p.Post(context.Background(), provider.Write{Target: "!r:example.org", Body: []byte(body), IdempotencyKey: "tm-" + body[:2]}); err != nil {
			t.Fatal(err)
		}
	}
	if got[0]["format"] != "org.matrix.custom.html" || got[0]["formatted_body"] != provider.TextHTML(got[0]["body"]) {
		t.Fatalf("first message %v", got[0])
	}
	if _, ok := got[1]["formatted_body"]; ok || len(got[1]["body"]) != 40000 {
		t.Fatalf("a message whose HTML would not fit carries it: %d bytes of HTML", len(got[1]["formatted_body"]))
	}
}

// Every message says it mentions no one (m.mentions, empty: the spec's
// intentional mentions), so a homeserver notifies no user or room from
// the words of its body; the body, what the listing joins on, is as sent.
func TestAMessageMentionsNoOne(t *testing.T) {
	var got map[string]json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		_, _ = w.Write([]byte(`{"event_id":"$1"}`))
	}))
	defer srv.Close()
	p, err := matrix.New(matrix.Config{HomeserverURL: srv.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	body := "Ping @room and @alice:example.org"
	if _, err := p.Post(context.Background(), provider.Write{Target: "!r:example.org", Body: []byte(body), IdempotencyKey: "tm-1"}); err != nil {
		t.Fatal(err)
	}
	if string(got["m.mentions"]) != "{}" || string(got["body"]) != `"`+body+`"` {
		t.Fatalf("event content %s", got)
	}
}

// A room's messages are read backwards; once a page ends with a message
// older than the listing's Since, the room has nothing more to show and
// the next room is read: a long room history is not read to its start.
func TestARoomIsReadBackOnlyToSince(t *testing.T) {
	since := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var reads []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/account/whoami") {
			_, _ = w.Write([]byte(`{"user_id":"@bot:example.org"}`))
			return
		}
		room, from := strings.Split(r.URL.EscapedPath(), "/")[5], r.URL.Query().Get("from")
		reads = append(reads, room+"@"+from)
		// Each page holds two messages an hour apart, the first page
		// ending an hour before since.
		page := map[string]int{"": 0, "t1": 1, "t2": 2}[from]
		newest := since.Add(time.Duration(-2*page) * time.Hour)
		fmt.Fprintf(w, `{"chunk":[{"type":"m.room.message","sender":"@bot:example.org","event_id":"$a%d","origin_server_ts":%d,"content":{"body":"a"}},`+
			`{"type":"m.room.message","sender":"@bot:example.org","event_id":"$b%d","origin_server_ts":%d,"content":{"body":"b"}}],"end":"t%d"}`,
			page, newest.UnixMilli(), page, newest.Add(-time.Hour).UnixMilli(), page+1)
	}))
	defer srv.Close()
	p, err := matrix.New(matrix.Config{HomeserverURL: srv.URL, Token: "t", Rooms: []string{"!one:example.org", "!two:example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	for cursor, n := "", 0; ; n++ {
		if n > 10 {
			t.Fatalf("no end after %d pages: %v", n, reads)
		}
		pg, err := p.ListOwn(context.Background(), provider.ListQuery{Cursor: cursor, Since: since})
		if err != nil {
			t.Fatal(err)
		}
		if pg.Next == "" {
			break
		}
		cursor = pg.Next
	}
	want := []string{"%21one:example.org@", "%21two:example.org@"}
	if strings.Join(reads, " ") != strings.Join(want, " ") {
		t.Fatalf("read %v; want the first page of each room only (it ends before since)", reads)
	}
}
