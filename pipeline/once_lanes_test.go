package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/outbox"
	"github.com/tidemark/tidemark/sqlstore"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// A pass whose delivery left a lane undone (here a lane that cannot
// deliver in this process) is an incomplete pass like any other, as
// RunOnce's doc says: its error is an *IncompleteError naming the lane,
// and the lane's own error can still be told apart.
func TestRunOnceWithALaneLeftUndoneIsIncomplete(t *testing.T) {
	ctx := context.Background()
	p := openBackend(t, sqltest.Backends()[0])
	lane := outbox.LaneConfig{Name: "hook", Provider: "webhook",
		Settings: map[string]string{"url": "https://hooks.example/x", "secret_env": "TIDEMARK_TEST_NO_SUCH_SECRET"}}
	if _, err := p.DB().Outbox().AddLane(ctx, sqlstore.NewLane{LaneConfig: lane}); err != nil {
		t.Fatal(err)
	}
	_, err := p.RunOnce(ctx, OnceOptions{})
	var inc *IncompleteError
	var broken *LaneBrokenError
	if !errors.As(err, &inc) || !strings.Contains(inc.What, "hook") || !errors.As(err, &broken) ||
		tidemark.ExitCode(err) != tidemark.ExitUnavailable {
		t.Fatalf("RunOnce with a broken lane: %v (%T); want an *IncompleteError naming the lane, wrapping the lane's error", err, err)
	}
	if n := strings.Count(err.Error(), "TIDEMARK_TEST_NO_SUCH_SECRET"); n != 1 {
		t.Errorf("the lane's error is said %d times, want once:\n%v", n, err)
	}
}
