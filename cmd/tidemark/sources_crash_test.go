package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/ingest"
)

// TestSourcesHelperProcess is the CLI in a child process, for crash tests:
// it runs only when re-executed by one.
func TestSourcesHelperProcess(t *testing.T) {
	if os.Getenv("TIDEMARK_SOURCES_HELPER") != "1" {
		t.Skip("runs only as a re-executed child")
	}
	for i, a := range os.Args {
		if a == "--" {
			os.Exit(run(os.Args[i+1:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(2)
}

// A worker killed at each step of settling a feed run loses nothing and
// duplicates nothing: the restarted worker re-enters its run, fetches again
// and settles every entry exactly once.
func TestFeedRunSurvivesACrashWhileSettling(t *testing.T) {
	for _, fp := range []string{"ingest.run.after-fetch", "ingest.settle.after-events", "ingest.settle.before-commit"} {
		t.Run(fp, func(t *testing.T) {
			t.Setenv(AllowPrivateEnv, "1")
			srv := newBlog(t)
			home := t.TempDir()
			mustTidemark(t, 0, "--home", home, "source", "add", srv.URL+"/blog/rss.xml", "--name", "blog")

			cmd := exec.Command(os.Args[0], "-test.run=^TestSourcesHelperProcess$", "--", "--home", home, "--holder", "w1", "run", "--once")
			cmd.Env = append(os.Environ(), "TIDEMARK_SOURCES_HELPER=1", "TIDEMARK_FAILPOINTS="+fp+"=crash")
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the child was not killed at %s: %v\n%s", fp, err, out)
			}
			if evs := mustTidemark(t, 0, "--home", home, "events", "list", "--json"); evs != "[]\n" {
				t.Fatalf("events before the restart: %s", evs)
			}

			var reps []ingest.Report
			if err := json.Unmarshal([]byte(mustTidemark(t, 0, "--home", home, "--holder", "w1", "run", "--once", "--json")), &reps); err != nil {
				t.Fatal(err)
			}
			if len(reps) != 1 || reps[0].Outcome != tidemark.OutcomeItems || reps[0].EventsNew != 2 || !reps[0].Reentered {
				t.Fatalf("restart: %+v", reps)
			}
			var evs []tidemark.Event
			if err := json.Unmarshal([]byte(mustTidemark(t, 0, "--home", home, "events", "list", "--json")), &evs); err != nil {
				t.Fatal(err)
			}
			if len(evs) != 2 || evs[0].Revision != 1 || evs[1].Revision != 1 {
				t.Fatalf("events after the restart: %+v", evs)
			}
		})
	}
}

// A worker killed mid-run under the default identity (host:pid) holds its
// claim for a lease no process will renew; the next process on the same
// host sees that pid is gone and takes the claim over at once, recording
// the crashed run as lost, instead of waiting out the lease.
func TestCrashedHolderIsTakenOverAtOnce(t *testing.T) {
	t.Setenv(AllowPrivateEnv, "1")
	srv := newBlog(t)
	home := t.TempDir()
	mustTidemark(t, 0, "--home", home, "source", "add", srv.URL+"/blog/rss.xml", "--name", "blog")

	cmd := exec.Command(os.Args[0], "-test.run=^TestSourcesHelperProcess$", "--", "--home", home, "run", "--once", "--lease", "1h")
	cmd.Env = append(os.Environ(), "TIDEMARK_SOURCES_HELPER=1", "TIDEMARK_FAILPOINTS=ingest.run.after-fetch=crash")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed: %v\n%s", err, out)
	}

	var reps []ingest.Report
	if err := json.Unmarshal([]byte(mustTidemark(t, 0, "--home", home, "run", "--once", "--json")), &reps); err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].Outcome != tidemark.OutcomeItems || reps[0].EventsNew != 2 || reps[0].Reentered {
		t.Fatalf("after the crash: %+v, want the claim taken over and settled", reps)
	}
	var runs []tidemark.Run
	if err := json.Unmarshal([]byte(mustTidemark(t, 0, "--home", home, "runs", "list", "--json")), &runs); err != nil {
		t.Fatal(err)
	}
	var lost []tidemark.Run
	for _, r := range runs {
		if r.Outcome == tidemark.OutcomeLost {
			lost = append(lost, r)
		}
	}
	if len(lost) != 1 || lost[0].Holder != ingest.HolderID(mustHostname(t), cmd.ProcessState.Pid()) {
		t.Fatalf("runs %+v, want the crashed process's run lost", runs)
	}
}

func mustHostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}
