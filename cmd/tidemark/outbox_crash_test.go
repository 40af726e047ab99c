package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark/clock"
	"github.com/tidemark/tidemark/outbox/providertest"
)

// TestOutboxHelperProcess is not a test: re-executed with
// TM_OUTBOX_CLI_ARGS set, it runs the tidemark command line in a process of
// its own (so a failpoint can kill it) and exits with its code.
func TestOutboxHelperProcess(t *testing.T) {
	args := os.Getenv("TM_OUTBOX_CLI_ARGS")
	if args == "" {
		t.Skip("helper process only")
	}
	os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// TestOutboxDeliverCrashThenRecover kills `tidemark outbox deliver --once`
// right after a write leaves, then runs it again: the second run
// reconciles with one ordered read and sends the rest, and the provider's
// own count shows every write exactly once.
func TestOutboxDeliverCrashThenRecover(t *testing.T) {
	t.Setenv("TM_CLI_SECRET", "k")
	// The provider's clock runs ahead: its Date headers never make an
	// answer look older than our own request time.
	srv := providertest.New(t, clock.NewFake(time.Now().Add(time.Hour)), []byte("k"))
	base := []string{"--db", "sqlite:" + filepath.Join(t.TempDir(), "t.db"), "--holder", "cli-test"}
	cmd := func(args ...string) []byte { return mustRun(t, append(append([]string(nil), base...), args...)...) }
	add := []string{"outbox", "lane", "add", "hook", "--provider", "webhook", "--min-gap", "0s", "--skew", "0s", "--setting", "secret_env=TM_CLI_SECRET"}
	for k, v := range srv.Settings() {
		add = append(add, "--setting", k+"="+v)
	}
	cmd(add...)
	for _, body := range []string{"one", "two", "three", "four"} {
		cmd("outbox", "intents", "draft", "--lane", "hook", "--target", "room", "--body", body)
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestOutboxHelperProcess$")
	helper.Env = append(os.Environ(), "TIDEMARK_FAILPOINTS=outbox.send.after-send=crash@2",
		"TM_OUTBOX_CLI_ARGS="+strings.Join(append(append([]string(nil), base...), "outbox", "deliver", "--once"), "\x1f"))
	out, err := helper.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("deliver was not killed: %v\n%s", err, out)
	}
	if srv.Count() != 2 {
		t.Fatalf("provider holds %d writes after the crash, want 2", srv.Count())
	}
	var reports []struct {
		Steps []struct {
			Kind     string `json:"kind"`
			Requests int    `json:"requests"`
			Plan     struct {
				Landed []string `json:"landed"`
			} `json:"plan"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(cmd("outbox", "deliver", "--once", "--json"), &reports); err != nil {
		t.Fatal(err)
	}
	first := reports[0].Steps[0]
	if first.Kind != "reconciled" || first.Requests != 1 || len(first.Plan.Landed) != 2 {
		t.Fatalf("recovery's first step %+v", first)
	}
	if srv.Count() != 4 || len(srv.Duplicates()) != 0 || srv.Posts() != 4 {
		t.Fatalf("provider holds %d writes from %d posts, duplicates %v", srv.Count(), srv.Posts(), srv.Duplicates())
	}
}
