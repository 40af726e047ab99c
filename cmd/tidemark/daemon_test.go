package main

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
)

func TestRunRefusesABadSweepIntervalAtStart(t *testing.T) {
	for _, v := range []string{"soon", "0s", "-1m", "10"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv("TIDEMARK_SWEEP_INTERVAL", v)
			out, code := runCLI(t, "--home", t.TempDir(), "run")
			if code != tidemark.ExitInvalid {
				t.Fatalf("exit %d, want %d\n%s", code, tidemark.ExitInvalid, out)
			}
			if !strings.Contains(out, "TIDEMARK_SWEEP_INTERVAL") || strings.Contains(out, "running as") {
				t.Fatalf("want a refusal naming the setting before anything runs:\n%s", out)
			}
		})
	}
}
