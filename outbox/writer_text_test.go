package outbox

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
)

// A lane whose writer's lease no longer stands is shown so, in the table
// and with why in lane show, as a source's claim is; one that stands is
// shown as it is.
func TestAWriterWhoseLeaseNoLongerStandsIsShownSo(t *testing.T) {
	until := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for state, want := range map[tidemark.ClaimState]string{
		tidemark.ClaimGone:    "vm:29284 (gone)",
		tidemark.ClaimExpired: "vm:29284 (lease expired)",
		tidemark.ClaimRunning: "vm:29284 ",
	} {
		v := LaneView{Lane: Lane{LaneConfig: LaneConfig{Name: "hooks", Provider: "webhook"}, LeaseHolder: "vm:29284",
			LeaseExpiresAt: &until, ClaimState: state}, Health: HealthOK}
		var b bytes.Buffer
		if err := v.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, want) {
			t.Errorf("%s: lane show lacks %q:\n%s", state, want, out)
		}
		if sending := !strings.Contains(out, "not sending"); sending != (state == tidemark.ClaimRunning) {
			t.Errorf("%s: lane show says whether it sends wrongly:\n%s", state, out)
		}
	}
}
