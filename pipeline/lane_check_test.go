package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// lane add and lane set refuse settings the remote would refuse on every
// write (a Mastodon visibility it has not, a GitHub since it cannot read),
// naming the setting and storing nothing.
func TestLaneAddAndSetRefuseSettingsTheRemoteWouldRefuse(t *testing.T) {
	p := openBackend(t, sqltest.Backends()[0])
	ctx := context.Background()
	_, err := p.AddLane(ctx, "toot", "mastodon", outbox.LaneChange{Settings: map[string]string{"base_url": "https://m.example", "token": "m-1", "visibility": "friends"}}, "ada")
	if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "visibility") {
		t.Fatalf("lane add with visibility=friends: %v", err)
	}
	if _, err := p.Lane(ctx, "toot"); !errors.Is(err, tidemark.ErrNotFound) {
		t.Fatalf("a refused lane was stored: %v", err)
	}
	mustAddLane(t, p, "gh", "github", outbox.LaneChange{Settings: map[string]string{"token": "ghp-1", "repos": "acme/widgets"}})
	_, err = p.SetLane(ctx, "gh", outbox.LaneChange{Settings: map[string]string{"since": "yesterday"}}, "ada")
	if !errors.Is(err, tidemark.ErrInvalid) || !strings.Contains(err.Error(), "since") {
		t.Fatalf("lane set since=yesterday: %v", err)
	}
	if v, err := p.Lane(ctx, "gh"); err != nil || v.Settings["since"] != "" {
		t.Fatalf("a refused change was stored: %+v %v", v.Settings, err)
	}
}

// A lane that cannot deliver from here (its secret's variable is not set on
// this machine) is added, broken, and does not announce a guarantee it
// cannot keep from here.
func TestALaneThatCannotDeliverFromHereAnnouncesNoGuarantee(t *testing.T) {
	p := openBackend(t, sqltest.Backends()[0])
	v := mustAddLane(t, p, "toot", "mastodon", outbox.LaneChange{Settings: map[string]string{"base_url": "https://m.example", "token_env": "TIDEMARK_TEST_UNSET_TOKEN"}})
	if v.Health != outbox.HealthBroken || !strings.Contains(v.Problem, "TIDEMARK_TEST_UNSET_TOKEN") {
		t.Fatalf("health %q (%s), want broken naming the variable", v.Health, v.Problem)
	}
	if v.Guarantee != nil {
		t.Errorf("a broken lane announces %+v", *v.Guarantee)
	}
	if s := v.Summary(); strings.Contains(s, string("exactly-once")) || !strings.Contains(s, "cannot deliver from here") {
		t.Errorf("summary %q", s)
	}
}
