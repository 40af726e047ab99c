package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A lane stored naming tidemark's own variable (before the rule, or by
// hand) is broken; a lane set that does not touch that setting (its gap,
// another setting) is the operator's to make: it is made, and the lane
// shows still broken, with the fix. A change that names such a variable
// is still refused.
func TestLaneSetOfAnotherSettingOnABrokenLaneIsMade(t *testing.T) {
	ctx := context.Background()
	p := openBackend(t, sqltest.Backends()[0])
	lane := outbox.LaneConfig{Name: "badenv", Provider: "webhook", MinGap: tidemark.Duration(time.Second),
		Settings: map[string]string{"url": "https://hooks.example/x", "secret_env": "TIDEMARK_DB"}}
	if _, err := p.DB().Outbox().AddLane(ctx, sqlstore.NewLane{LaneConfig: lane}); err != nil {
		t.Fatal(err)
	}
	gap := tidemark.Duration(2 * time.Second)
	for _, ch := range []outbox.LaneChange{{MinGap: &gap}, {Settings: map[string]string{"url": "https://hooks.example/y"}}} {
		set, err := p.SetLane(ctx, "badenv", ch, "ada")
		if err != nil {
			t.Fatalf("lane set %+v on a lane broken by another setting: %v", ch, err)
		}
		if set.Health != outbox.HealthBroken || !strings.Contains(set.Problem, "secret_env") ||
			!strings.Contains(set.Problem, "tidemark outbox lane set badenv --setting secret_env=VARIABLE") {
			t.Errorf("after lane set %+v: health %q, problem %q; want broken, with the fix", ch, set.Health, set.Problem)
		}
	}
	v, err := p.Lane(ctx, "badenv")
	if err != nil || v.MinGap != gap || v.Settings["secret_env"] != "TIDEMARK_DB" {
		t.Fatalf("lane after the changes: %+v %v", v.Lane, err)
	}
	if secrets, err := p.DB().Outbox().LaneSecrets(ctx, "badenv"); err != nil || secrets["url"] != "https://hooks.example/y" {
		t.Fatalf("the lane's url after the change: %v", err) // its path is kept apart, as a secret
	}
	_, err = p.SetLane(ctx, "badenv", outbox.LaneChange{Settings: map[string]string{"secret_env": "TIDEMARK_STORE"}}, "ada")
	if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "TIDEMARK_STORE") {
		t.Errorf("lane set naming another configuration variable: %v; want it refused", err)
	}
	if _, err := p.SetLane(ctx, "badenv", outbox.LaneChange{Settings: map[string]string{"secret_env": "HOOK_SECRET"}}, "ada"); err != nil {
		t.Fatalf("the fix: %v", err)
	}
}
