package pipeline

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch/kinds"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A variable that is tidemark's own configuration (every variable Options
// reads: the database URL, the LLM key, the S3 keys, …) is never a lane's
// secret, by any face: lane add and lane set refuse it on the CLI (no
// admission) as over the API, naming the setting and the variable.
func TestLaneRefusesAConfigurationVariableAsItsSecret(t *testing.T) {
	p := openBackend(t, sqltest.Backends()[0])
	api := kinds.WithAdmission(context.Background(), kinds.Admission{AllowPrivate: true})
	mustAddLane(t, p, "ok", "ntfy", outbox.LaneChange{Settings: map[string]string{"base_url": "https://ntfy.example", "token_env": "TIDEMARK_TEST_UNSET_TOKEN"}})
	n := 0
	for _, o := range Options {
		for _, name := range o.Env {
			n++
			for face, ctx := range map[string]context.Context{"cli": context.Background(), "api": api} {
				settings := map[string]string{"base_url": "https://ntfy.example", "token_env": name}
				_, err := p.AddLane(ctx, "x", "ntfy", outbox.LaneChange{Settings: settings}, "ada")
				if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "token_env") || !strings.Contains(err.Error(), name) {
					t.Errorf("%s: lane add with token_env=%s: %v; want a refusal naming the setting and the variable", face, name, err)
				}
				_, err = p.SetLane(ctx, "ok", outbox.LaneChange{Settings: map[string]string{"token_env": name}}, "ada")
				if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), name) {
					t.Errorf("%s: lane set with token_env=%s: %v; want a refusal", face, name, err)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d configuration variables: Options lost its variables", n)
	}
}

// A lane stored before the rule (or written to the database by hand) that
// names a configuration variable cannot send it: where the variable is
// read, at delivery and reconciliation, the lane is broken with an error
// naming the setting and what to do, and its remote hears nothing.
func TestStoredLaneNeverReadsAConfigurationVariable(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		p := openBackend(t, b)
		const secret = "SEKRET-openai-key-4711"
		t.Setenv("TIDEMARK_OPENAI_API_KEY", secret)
		var heard atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			heard.Add(1)
			w.Header().Set("Content-Type", "application/x-ndjson")
		}))
		defer srv.Close()
		lane := outbox.LaneConfig{Name: "exfil", Provider: "ntfy", MinGap: tidemark.Duration(0),
			Settings: map[string]string{"base_url": srv.URL, "token_env": "TIDEMARK_OPENAI_API_KEY", "topics": "t"}}
		if _, err := p.DB().Outbox().AddLane(ctx, sqlstore.NewLane{LaneConfig: lane}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Reconcile(ctx, "exfil", "ada"); err == nil || !strings.Contains(err.Error(), "token_env") || !strings.Contains(err.Error(), "TIDEMARK_OPENAI_API_KEY") ||
			!strings.Contains(err.Error(), "lane set exfil --setting token_env=") {
			t.Errorf("reconcile: %v; want the lane broken, naming token_env and the variable", err)
		} else if strings.Contains(err.Error(), secret) {
			t.Errorf("reconcile's error shows the secret: %v", err)
		}
		if _, err := p.Draft(ctx, outbox.Draft{Lane: "exfil", Target: "t", Body: "hi"}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.DeliverOnce(ctx, "exfil", time.Minute); err == nil {
			t.Errorf("deliver: no error; want the lane broken")
		}
		v, err := p.Lane(ctx, "exfil")
		if err != nil {
			t.Fatal(err)
		}
		if v.Guarantee != nil {
			t.Errorf("lane show: a guarantee %+v for a lane that cannot deliver", v.Guarantee)
		}
		if n := heard.Load(); n != 0 {
			t.Errorf("the lane's remote was sent %d request(s) carrying tidemark's own configuration", n)
		}
	})
}
