package pipeline

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A channel its lane can never write to is refused when it is added, with
// an error naming what to give instead, and nothing is stored: its provider
// is asked (CanWrite), as the deliverer asks before every send. A lane whose
// remote cannot be asked now (unreachable) still gets its channel: that is
// not a target that can never work.
func TestAddChannelRefusesATargetItsLaneCanNeverWrite(t *testing.T) {
	p := openBackend(t, sqltest.Backends()[0])
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/statuses/999", "/repos/acme/widgets/issues/404":
			http.Error(w, `{"error":"Record not found"}`, http.StatusNotFound)
		case "/api/v1/statuses/42":
			w.Write([]byte(`{"id":"42"}`))
		case "/repos/acme/widgets/issues/1":
			w.Write([]byte(`{"locked":false}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	if _, err := p.DB().Ingest().AddSource(ctx, ingest.NewSource{Name: "docs", Kind: "git", Location: "/tmp/docs", Interval: DefaultInterval, RetryBudget: 3}); err != nil {
		t.Fatal(err)
	}
	mustAddLane(t, p, "slk", "slack", outbox.LaneChange{Settings: map[string]string{"token": "xoxb-1", "channels": "C0AAAA1"}})
	mustAddLane(t, p, "gh", "github", outbox.LaneChange{Settings: map[string]string{"token": "ghp-1", "api_url": srv.URL}})
	mustAddLane(t, p, "ghoff", "github", outbox.LaneChange{Settings: map[string]string{"token": "ghp-1", "api_url": "http://127.0.0.1:1"}})
	mustAddLane(t, p, "dsc", "discord", outbox.LaneChange{Settings: map[string]string{"url": "http://127.0.0.1:1/api/webhooks/1/tok"}})
	mustAddLane(t, p, "mst", "mastodon", outbox.LaneChange{Settings: map[string]string{"token": "m-1", "base_url": srv.URL}})
	mustAddLane(t, p, "mtx", "matrix", outbox.LaneChange{Settings: map[string]string{"token": "mx-1", "homeserver_url": "http://127.0.0.1:1"}})
	mustAddLane(t, p, "nt", "ntfy", outbox.LaneChange{Settings: map[string]string{"base_url": "http://127.0.0.1:1"}})
	for _, tc := range []struct {
		lane, target, parent string
		want                 []string // in the refusal; nil: added
	}{
		{"slk", "#changes", "", []string{"#changes", "channel id", "C…"}},
		{"slk", "C0AAAA1", "", nil},
		{"gh", "acme widgets", "", []string{"owner/repo#number"}},
		{"gh", "acme/widgets#404", "", []string{"acme/widgets#404", "404"}},
		{"gh", "acme/widgets#1", "", nil},
		{"ghoff", "acme/widgets#7", "", nil}, // cannot be asked now: added
		{"dsc", "general", "", []string{"general", `"channel"`}},
		{"dsc", "channel", "", nil},
		{"mst", "timeline", "999", []string{"999", "404"}},
		{"mst", "timeline", "42", nil},
		{"mst", "home", "", []string{"home", `"timeline"`}},
		{"mtx", "#room:example.org", "", []string{"#room:example.org", "room id", "!…:server"}},
		{"mtx", "!room:example.org", "", nil},
		{"nt", "tm changes", "", []string{"tm changes", "topic"}},
		{"nt", "tm-changes", "", nil},
	} {
		_, err := p.AddChannel(ctx, outbox.ChannelRef{Source: "docs", Lane: tc.lane, Target: tc.target, Parent: tc.parent}, "ada")
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s → %s/%s: %v", tc.lane, tc.target, tc.parent, err)
			}
			continue
		}
		if !errors.Is(err, tidemark.ErrInvalid) {
			t.Errorf("%s → %s/%s: want a refusal (invalid), got %v", tc.lane, tc.target, tc.parent, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s → %s/%s: refusal %q does not say %q", tc.lane, tc.target, tc.parent, err, w)
			}
		}
	}
	cs, err := p.Channels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		switch c.Lane + " " + c.Target + " " + c.Parent {
		case "slk C0AAAA1 ", "gh acme/widgets#1 ", "ghoff acme/widgets#7 ", "dsc channel ", "mst timeline 42", "mtx !room:example.org ", "nt tm-changes ":
		default:
			t.Errorf("a refused channel was stored: %+v", c)
		}
	}
	if len(cs) != 7 {
		t.Errorf("%d channels stored, want 7", len(cs))
	}
}
