package sqlstore_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/outbox/provider"
	"github.com/tidemark/tidemark/outbox/providers"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A lane's secrets live apart from its shown settings; a lane stored with
// its secrets among the settings (before they were kept apart) gives them
// up when sealed, losing nothing, and sealing again changes nothing.
func TestLaneSecretsApart(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := sqltest.MustOpen(t, b, sqltest.NewEnv(9))
		st := db.Outbox()
		given := map[string]string{"url": "https://u6:PW6SECRET@hooks.example.com/T0/B0/SECRETPATH", "secret": "s3cr3t-value", "page_size": "10",
			// A password url.Parse refuses, in a secondary URL setting:
			// kept in the shown settings before such URLs were hidden.
			"list_url": "http://u:SECRET#H111@127.0.0.1:9/l"}
		shown, secret := providers.Split("webhook", given)
		if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "new", Provider: "webhook", Settings: shown, MinGap: tidemark.Duration(time.Second)}, Secrets: secret}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "bad", Provider: "webhook", Settings: map[string]string{}}, Secrets: map[string]string{"secret": "x"}}); !errors.Is(err, tidemark.ErrInvalid) {
			t.Fatalf("a secret without its shown setting: %v", err)
		}
		// As a database from before kept it: secrets among the settings.
		if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "old", Provider: "webhook", Settings: given, MinGap: tidemark.Duration(time.Second)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: outbox.LaneConfig{Name: "plain", Provider: "webhook", Settings: map[string]string{"url": "https://x.example/", "secret_env": "S"}}}); err != nil {
			t.Fatal(err)
		}
		n, err := st.SealLaneSecrets(ctx, providers.Split)
		if err != nil || n != 1 {
			t.Fatalf("seal: %d lanes, %v; want 1", n, err)
		}
		if n, err := st.SealLaneSecrets(ctx, providers.Split); err != nil || n != 0 {
			t.Fatalf("seal again: %d lanes, %v; want 0", n, err)
		}
		for _, name := range []string{"new", "old"} {
			l, err := st.Lane(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range l.Settings {
				if strings.Contains(v, "s3cr3t") || strings.Contains(v, "SECRET") {
					t.Errorf("lane %s shows %s = %q", name, k, v)
				}
			}
			sec, err := st.LaneSecrets(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if back := provider.Merge(l.Settings, sec); !maps.Equal(back, given) {
				t.Errorf("lane %s: settings with secrets %v, want %v", name, back, given)
			}
		}
		if sec, err := st.LaneSecrets(ctx, "plain"); err != nil || len(sec) != 0 {
			t.Fatalf("a lane without secrets: %v %v", sec, err)
		}
	})
}

// A lane is added under the rules a change to it is held to
// (LaneConfig.Validate): a bad one is refused and nothing is stored.
func TestAddLaneFollowsTheRulesOfAChange(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		st := sqltest.MustOpen(t, b, sqltest.NewEnv(1)).Outbox()
		for _, c := range []outbox.LaneConfig{
			{Name: "", Provider: "webhook"},
			{Name: "two words", Provider: "webhook"},
			{Name: "a/b", Provider: "webhook"},
			{Name: "gap", Provider: "webhook", MinGap: tidemark.Duration(-time.Second)},
			{Name: "skew", Provider: "webhook", Skew: tidemark.Duration(-time.Second)},
			{Name: "retire", Provider: "webhook", Retirement: outbox.RetirementPolicy{Checks: -1}},
		} {
			if _, err := st.AddLane(ctx, sqlstore.NewLane{LaneConfig: c}); !errors.Is(err, tidemark.ErrInvalid) {
				t.Errorf("add %+v: %v, want invalid", c, err)
			}
		}
		if ls, err := st.Lanes(ctx); err != nil || len(ls) != 0 {
			t.Fatalf("after the refusals: %d lanes, %v", len(ls), err)
		}
	})
}
