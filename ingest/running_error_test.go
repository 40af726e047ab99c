package ingest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ingest"
)

// A run in flight says when it started as every time reaches the API and
// the console: in UTC, marked as such, never in the server's own zone.
func TestRunningErrorSaysItsTimeInUTC(t *testing.T) {
	since := time.Date(2026, 12, 1, 15, 8, 34, 0, time.FixedZone("EST", -5*3600))
	msg := (&ingest.RunningError{Source: "slow", Since: since}).Error()
	if !strings.Contains(msg, "2026-12-01 20:08:34 UTC") {
		t.Errorf("RunningError = %q, want its start in UTC (2026-12-01 20:08:34 UTC)", msg)
	}
}
