package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidemark/tidemark/content"
)

// SIGINT during run --once: the run in flight is released, the process
// exits 130, and the message says what was kept and how to resume.
func TestRunOnceInterruptSaysWhatWasKept(t *testing.T) {
	hung := make(chan struct{}, 1)
	var armed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !armed.Load() { // source add looks at the feed first
			w.Header().Set("Content-Type", "application/rss+xml")
			w.Write([]byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>t</title></channel></rss>`))
			return
		}
		select {
		case hung <- struct{}{}:
		default:
		}
		<-r.Context().Done() // never answers
	}))
	defer srv.Close()
	defer srv.CloseClientConnections()
	env := []string{AllowPrivateEnv + "=1"}
	mustOK(t, tm(t, env, "source", "add", srv.URL+"/feed.xml", "--kind", "feed", "--name", "hung"))
	armed.Store(true)

	cmd := exec.Command(binary, "run", "--once")
	cmd.Env = append(append(os.Environ(), "TIDEMARK_HOME="+homeFor(t)), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-hung // the fetch is in flight
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130\n%s\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"run --once interrupted: 0 runs settled and are kept, 0 failed, 1 were cut short",
		"without spending their retry budget", "run the same command again to resume"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
	s := showSource(t, "", "hung")
	for _, r := range s.Runs {
		if r.Status == "active" {
			t.Fatalf("active run after the interrupt: %+v", s.Runs)
		}
	}
}

// A migration stopped in the middle of a batch (SIGINT, or a batch that
// failed for a reason that is not the data's) gives its claim up and says
// how to carry it on: `migrate resume RUN`, which another process (another
// default holder) then does at once, with no lease to wait out. "Run the
// same command again" would start a second run of the field, and be refused.
func TestMigrationStoppedInABatchResumesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failpoint string
		interrupt bool
	}{
		{"interrupted", "migrate.batch.after-commit=delay(60000)@1", true},
		{"batch error", "migrate.batch.after-convert=error@2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustOK(t, tm(t, nil, "docs", "collection", "create", "notes", "--field", "v:text"))
			for i := range 6 {
				mustOK(t, tm(t, nil, "docs", "put", "notes", "--text", fmt.Sprintf("v=%d", i)))
			}
			cmd := exec.Command(binary, "docs", "field", "set-type", "notes", "v", "number", "--batch", "2")
			cmd.Env = append(os.Environ(), "TIDEMARK_HOME="+homeFor(t), "TIDEMARK_FAILPOINTS="+tc.failpoint)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			runs := func() []content.Run {
				t.Helper()
				var rs []content.Run
				if err := json.Unmarshal([]byte(mustOK(t, tm(t, nil, "migrate", "list", "--json")).stdout), &rs); err != nil {
					t.Fatal(err)
				}
				return rs
			}
			if tc.interrupt {
				// The first batch commits, and its Step waits before it
				// returns (outside the transaction: SQLite lets other
				// processes read the run meanwhile).
				for i := 0; ; i++ {
					if rs := runs(); len(rs) == 1 && rs[0].Batches >= 1 {
						break
					}
					if i == 1000 {
						t.Fatal("the first batch never committed")
					}
				}
				if err := cmd.Process.Signal(os.Interrupt); err != nil {
					t.Fatal(err)
				}
			}
			err := cmd.Wait()
			ee, ok := err.(*exec.ExitError)
			if want := map[bool]int{true: 130, false: 1}[tc.interrupt]; !ok || ee.ExitCode() != want {
				t.Fatalf("set-type: %v, want exit %d\n%s\n%s", err, want, stdout.String(), stderr.String())
			}
			rs := runs()
			if len(rs) != 1 || rs[0].Status != content.RunRunning || rs[0].Converted != 2 || rs[0].Holder != "" {
				t.Fatalf("run after the stop: %+v, want running and unclaimed after one batch", rs)
			}
			if hint := "tidemark migrate resume " + rs[0].ID; !strings.Contains(stderr.String(), hint) || strings.Contains(stderr.String(), "run the same command again") {
				t.Errorf("stderr does not say %q (and only that):\n%s", hint, stderr.String())
			}
			var done content.Run
			out := mustOK(t, tm(t, nil, "migrate", "resume", rs[0].ID, "--json")).stdout
			if err := json.Unmarshal([]byte(out), &done); err != nil || done.Status != content.RunDone || done.Converted != 6 {
				t.Fatalf("resume: %+v %v\n%s", done, err, out)
			}
		})
	}
}
