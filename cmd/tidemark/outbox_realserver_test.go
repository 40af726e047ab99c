package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tidemark/tidemark/outbox/providertest"
)

// TestOutboxDeliverKilledMidSendOnARealHomeserver kills `tidemark outbox
// deliver --once` with SIGKILL, from outside, once a real Matrix
// homeserver (Dendrite, started by .ci/dendrite.sh) took its third message
// and before the answer reached it; `deliver --once` run again lands every
// intent in the room exactly once. Skipped without the homeserver.
func TestOutboxDeliverKilledMidSendOnARealHomeserver(t *testing.T) {
	hs, secret := os.Getenv("TIDEMARK_TEST_MATRIX_URL"), os.Getenv("TIDEMARK_TEST_MATRIX_SHARED_SECRET")
	if hs == "" || secret == "" {
		t.Skip("no homeserver: source .ci/dendrite.sh")
	}
	token, user := providertest.MustRegisterMatrixUser(t, hs, secret)
	room := providertest.MustCreateMatrixRoom(t, hs, token)
	u, err := url.Parse(hs)
	if err != nil {
		t.Fatal(err)
	}
	proxy, d := providertest.NewDropServer(t, httputil.NewSingleHostReverseProxy(u))
	t.Setenv("TM_CLI_MATRIX_TOKEN", token)

	base := []string{"--db", "sqlite:" + filepath.Join(t.TempDir(), "t.db"), "--holder", "cli-test"}
	cmd := func(args ...string) []byte { return mustRun(t, append(append([]string(nil), base...), args...)...) }
	cmd("outbox", "lane", "add", "room", "--provider", "matrix", "--min-gap", "0s", "--skew", "0s",
		"--setting", "homeserver_url="+proxy.URL, "--setting", "token_env=TM_CLI_MATRIX_TOKEN",
		"--setting", "user_id="+user, "--setting", "rooms="+room)
	var bodies []string
	for i := range 5 {
		body := fmt.Sprintf("Release 2.%d\n\nFixes %d bugs.", i, i+1)
		cmd("outbox", "intents", "draft", "--lane", "room", "--target", room, "--body", body)
		bodies = append(bodies, body)
	}

	helper := exec.Command(os.Args[0], "-test.run=^TestOutboxHelperProcess$")
	helper.Env = append(os.Environ(), "TM_OUTBOX_CLI_ARGS="+strings.Join(append(append([]string(nil), base...), "outbox", "deliver", "--once"), "\x1f"))
	started := make(chan struct{})
	d.KillAt(3, func() { <-started; _ = helper.Process.Kill() })
	var out bytes.Buffer
	helper.Stdout, helper.Stderr = &out, &out
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	close(started)
	var ee *exec.ExitError
	if err := helper.Wait(); !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("deliver was not killed mid-send: %v\n%s", err, out.Bytes())
	}
	if got := providertest.MatrixBodies(t, hs, token, room, user); len(got) != 3 {
		t.Fatalf("the room holds %d messages after the kill, want 3", len(got))
	}

	cmd("outbox", "deliver", "--once")
	got := providertest.MatrixBodies(t, hs, token, room, user)
	if strings.Join(got, "|") != strings.Join(bodies, "|") {
		t.Fatalf("the room holds %q, want each intent once, in order: %q", got, bodies)
	}
}
