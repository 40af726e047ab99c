package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/pipeline"
)

// A source whose claim a killed process of this host still holds is not
// shown running by source list and source show: the holder is named gone,
// and the read leaves the claim for the next claim to take over.
func TestSourceListShowsAKilledHolderGone(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name:", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("cannot run a process to outlive:", err)
	}
	holder := fmt.Sprintf("%s:%d", host, dead.Process.Pid)
	home := t.TempDir()
	mustTidemark(t, 0, "--home", home, "source", "add", t.TempDir(), "--kind", "dir", "--name", "d")

	ctx := context.Background()
	cfg := pipeline.Defaults()
	cfg.Home = home
	p, err := pipeline.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	src, err := p.DB().Ingest().Source(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DB().Ingest().Claim(ctx, src.ID, holder, time.Hour); err != nil {
		t.Fatal(err)
	}
	p.Close()

	list := mustTidemark(t, 0, "--home", home, "source", "list")
	if strings.Contains(list, "running") || !strings.Contains(list, holder+" gone") {
		t.Fatalf("source list with a killed holder:\n%s", list)
	}
	show := mustTidemark(t, 0, "--home", home, "source", "show", "d")
	if !strings.Contains(show, "health: new") || !strings.Contains(show, "process "+holder+" of this host is gone") {
		t.Fatalf("source show with a killed holder:\n%s", show)
	}
	if runs := mustTidemark(t, 0, "--home", home, "runs", "list"); !strings.Contains(runs, "active (holder gone)") {
		t.Fatalf("runs list with a killed holder:\n%s", runs)
	}
	var srcs []tidemark.Source
	if err := json.Unmarshal([]byte(mustTidemark(t, 0, "--home", home, "source", "list", "--json")), &srcs); err != nil || len(srcs) != 1 {
		t.Fatalf("source list --json: %v", err)
	}
	if s := srcs[0]; s.ClaimState != tidemark.ClaimGone || s.ClaimHolder != holder {
		t.Fatalf("source list --json: claim %q by %q, want gone by %s", s.ClaimState, s.ClaimHolder, holder)
	}
}

// A worker killed mid-run on a source that was not due (run by name)
// leaves its claim behind; the next run --once, or a daemon started after
// it, takes the claim over on its first look although nothing is due: the
// killed run is recorded lost and nothing shows it under way any more,
// and the source waits for its schedule.
func TestAKilledWorkersClaimIsTakenOverOnTheFirstLook(t *testing.T) {
	for _, mode := range []string{"run --once", "daemon"} {
		t.Run(mode, func(t *testing.T) {
			home, dir := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o600); err != nil {
				t.Fatal(err)
			}
			mustTidemark(t, 0, "--home", home, "source", "add", dir, "--kind", "dir", "--name", "d")
			mustTidemark(t, 0, "--home", home, "run", "--once") // d is due again in 15 minutes

			killed := exec.Command(os.Args[0], "-test.run=^TestSourcesHelperProcess$", "--", "--home", home, "source", "run", "d")
			killed.Env = append(os.Environ(), "TIDEMARK_SOURCES_HELPER=1", "TIDEMARK_FAILPOINTS=ingest.run.after-fetch=crash")
			out, err := killed.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the worker was not killed: %v\n%s", err, out)
			}
			if runs := mustTidemark(t, 0, "--home", home, "runs", "list"); !strings.Contains(runs, "active (holder gone)") {
				t.Fatalf("runs list after the kill:\n%s", runs)
			}
			runs := func() []tidemark.Run {
				t.Helper()
				var runs []tidemark.Run
				if err := json.Unmarshal([]byte(mustTidemark(t, 0, "--home", home, "runs", "list", "--json")), &runs); err != nil {
					t.Fatal(err)
				}
				return runs
			}
			lost := func(runs []tidemark.Run) bool {
				return slices.ContainsFunc(runs, func(r tidemark.Run) bool { return r.Outcome == tidemark.OutcomeLost })
			}

			switch mode {
			case "run --once":
				if reps := mustTidemark(t, 0, "--home", home, "run", "--once", "--json"); reps != "[]\n" {
					t.Fatalf("run --once ran %s, want nothing: d is not due", reps)
				}
			case "daemon":
				daemon := exec.Command(os.Args[0], "-test.run=^TestSourcesHelperProcess$", "--", "--home", home, "run", "--poll", "100ms")
				daemon.Env = append(os.Environ(), "TIDEMARK_SOURCES_HELPER=1")
				var log syncBuffer
				daemon.Stdout, daemon.Stderr = &log, &log
				if err := daemon.Start(); err != nil {
					t.Fatal(err)
				}
				// The daemon's first look takes the claim over; wait for
				// it (bounded only so a broken daemon fails the test).
				for deadline := time.Now().Add(time.Minute); !lost(runs()); time.Sleep(50 * time.Millisecond) {
					if time.Now().After(deadline) {
						daemon.Process.Kill()
						daemon.Wait()
						t.Fatalf("the daemon did not take the killed worker's claim over:\n%s\n%s", mustTidemark(t, 0, "--home", home, "runs", "list"), log.String())
					}
				}
				if err := daemon.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				if err := daemon.Wait(); err != nil {
					t.Fatalf("daemon exit: %v\n%s", err, log.String())
				}
			}
			got := runs()
			if len(got) != 2 || !lost(got) || slices.ContainsFunc(got, func(r tidemark.Run) bool { return r.Status == tidemark.RunActive }) {
				t.Fatalf("runs after %s: %+v; want the first run and the killed one lost, none active", mode, got)
			}
			if list := mustTidemark(t, 0, "--home", home, "source", "list"); strings.Contains(list, "gone") {
				t.Fatalf("source list after %s:\n%s", mode, list)
			}
		})
	}
}
