package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/internal/gittest"
	"github.com/tidemark/tidemark/internal/testbin"
	"github.com/tidemark/tidemark/sqlstore/sqltest"
)

// binary is the tidemark binary built once for the end-to-end tests, so a
// failpoint can kill a real process.
var binary string

func TestMain(m *testing.M) {
	bin, cleanup, err := testbin.Build("tidemark-e2e", ".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "build tidemark:", err)
		os.Exit(1)
	}
	binary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

var (
	homesMu sync.Mutex
	homes   = map[testing.TB]string{}
)

// homeFor gives each test its own --home, so nothing a test runs writes
// into the source tree.
func homeFor(t testing.TB) string {
	homesMu.Lock()
	defer homesMu.Unlock()
	if h, ok := homes[t]; ok {
		return h
	}
	h := t.TempDir()
	homes[t] = h
	return h
}

type result struct {
	stdout, stderr string
	code           int
	killed         bool
}

// tm runs the binary with args and extra environment.
func tm(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), "TIDEMARK_HOME="+homeFor(t)), env...)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := result{stdout: so.String(), stderr: se.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run tidemark %v: %v", args, err)
		}
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			r.killed = true
		}
	}
	return r
}

func mustOK(t *testing.T, r result) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	return r
}

func mustRepo(t *testing.T, n int) string { return gittest.Repo(t, gittest.Changes(n)...) }

func gitIn(t *testing.T, dir string, args ...string) string { return gittest.Git(t, dir, args...) }

type sourceJSON struct {
	Name          string `json:"name"`
	Cursor        string `json:"cursor"`
	CursorVersion int64  `json:"cursor_version"`
	ClaimHolder   string `json:"claim_holder"`
	LastOutcome   string `json:"last_outcome"`
	Runs          []struct {
		Status  string `json:"status"`
		Outcome string `json:"outcome"`
	} `json:"runs"`
}

func showSource(t *testing.T, db, name string) sourceJSON {
	t.Helper()
	r := mustOK(t, tm(t, nil, "--db", db, "source", "show", name, "--json"))
	var s sourceJSON
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("source show --json: %v\n%s", err, r.stdout)
	}
	return s
}

func eventKeys(t *testing.T, db string) map[string]int {
	t.Helper()
	r := mustOK(t, tm(t, nil, "--db", db, "events", "list", "--json", "--limit", "1000"))
	var evs []tidemark.Event
	if err := json.Unmarshal([]byte(r.stdout), &evs); err != nil {
		t.Fatalf("events list --json: %v\n%s", err, r.stdout)
	}
	keys := map[string]int{}
	for _, e := range evs {
		keys[e.ItemKey]++
	}
	return keys
}

func TestMainJob(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		repo := mustRepo(t, 4)
		db := b.NewURL(t)
		home := t.TempDir()
		r := mustOK(t, tm(t, nil, "--home", home, "--db", db, "run", "--once", "--track", repo))
		for _, want := range []string{"tracking git repository", "items", "4 new", "change 3"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("main job output lacks %q:\n%s", want, r.stdout)
			}
		}
		if n := len(eventKeys(t, db)); n != 4 {
			t.Fatalf("%d events, want 4", n)
		}
		// Tracking the same repository again adds nothing.
		mustOK(t, tm(t, nil, "--home", home, "--db", db, "run", "--once", "--track", repo))
		var srcs []sourceJSON
		if err := json.Unmarshal([]byte(mustOK(t, tm(t, nil, "--db", db, "source", "list", "--json")).stdout), &srcs); err != nil || len(srcs) != 1 {
			t.Fatalf("sources: %+v %v", srcs, err)
		}
	})
}

// TestCrashDuringSettlement kills a real process at each settlement
// failpoint, then runs again: nothing partial is left, and the next run
// neither loses nor duplicates an event.
func TestCrashDuringSettlement(t *testing.T) {
	cases := []struct {
		point     string
		committed bool // whether the settlement survives the crash
	}{
		{"ingest.settle.after-events", false},
		{"ingest.settle.before-commit", false},
		{"ingest.settle.after-commit", true},
	}
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		for _, tc := range cases {
			t.Run(tc.point, func(t *testing.T) {
				repo := mustRepo(t, 3)
				head := gitIn(t, repo, "rev-parse", "HEAD")
				db := b.NewURL(t)
				holder := []string{"TIDEMARK_HOLDER=worker-a"}
				mustOK(t, tm(t, nil, "--db", db, "source", "add", repo, "--name", "repo"))

				r := tm(t, append(holder, "TIDEMARK_FAILPOINTS="+tc.point+"=crash"), "--db", db, "run", "--once")
				if !r.killed {
					t.Fatalf("the process was not killed at %s: exit %d\n%s%s", tc.point, r.code, r.stdout, r.stderr)
				}
				s := showSource(t, db, "repo")
				keys := eventKeys(t, db)
				if tc.committed {
					if s.Cursor != head || len(keys) != 3 || s.ClaimHolder != "" {
						t.Fatalf("after a crash past the commit: cursor %q, %d events, holder %q", s.Cursor, len(keys), s.ClaimHolder)
					}
					// Make it due again, as an operator would.
					mustOK(t, tm(t, nil, "--db", db, "source", "retry", "repo"))
				} else {
					if s.Cursor != "" || s.CursorVersion != 0 || len(keys) != 0 {
						t.Fatalf("partial state after a crash before the commit: cursor %q v%d, %d events", s.Cursor, s.CursorVersion, len(keys))
					}
					if s.ClaimHolder != "worker-a" {
						t.Fatalf("the crashed run's claim should still be held by its holder, got %q", s.ClaimHolder)
					}
				}
				// The restarted worker (same identity) re-enters its run or
				// runs anew, without waiting for a lease.
				r = mustOK(t, tm(t, holder, "--db", db, "run", "--once"))
				s = showSource(t, db, "repo")
				keys = eventKeys(t, db)
				if s.Cursor != head || len(keys) != 3 {
					t.Fatalf("after recovery: cursor %q (want %s), %d events (want 3)\n%s", s.Cursor, head, len(keys), r.stdout)
				}
				for k, n := range keys {
					if n != 1 {
						t.Fatalf("event %s stored %d times", k, n)
					}
				}
				if tc.committed && !strings.Contains(r.stdout, "empty") {
					t.Fatalf("the run after a committed settlement should find nothing new:\n%s", r.stdout)
				}
				for _, run := range s.Runs {
					if run.Status == "active" {
						t.Fatalf("a run is still active after recovery: %+v", s.Runs)
					}
				}
			})
		}
	})
}

func TestBadInputExitCodes(t *testing.T) {
	cases := []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{[]string{"TIDEMARK_FAILPOINTS=no.such.point=crash"}, []string{"failpoints"}, tidemark.ExitInvalid, "unknown point"},
		{[]string{"TIDEMARK_FAILPOINTS=ingest.settle.after-events=explode"}, []string{"failpoints"}, tidemark.ExitInvalid, "unknown action"},
		{nil, []string{"--db", "mysql://x", "source", "list"}, tidemark.ExitInvalid, "want sqlite:PATH, postgres://"},
		{nil, []string{"source", "show", "nope"}, tidemark.ExitNotFound, "not found"},
		{nil, []string{"source", "add", "/", "--kind", "nope"}, tidemark.ExitInvalid, "unknown kind"},
		{nil, []string{"runs", "list", "--outcome", "fine"}, tidemark.ExitInvalid, "want one of"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"--home", t.TempDir()}, tc.args...)
			r := tm(t, tc.env, args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", r.code, tc.code, r.stderr, tc.want)
			}
		})
	}
}

func TestFailpointsListed(t *testing.T) {
	r := mustOK(t, tm(t, nil, "failpoints", "--json"))
	var pts []struct{ Name, Separates string }
	if err := json.Unmarshal([]byte(r.stdout), &pts); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range pts {
		if p.Separates == "" {
			t.Errorf("failpoint %s does not say what it separates", p.Name)
		}
		names[p.Name] = true
	}
	for _, want := range []string{"ingest.settle.after-events", "ingest.settle.before-commit", "ingest.settle.after-commit", "ingest.claim.after-commit"} {
		if !names[want] {
			t.Errorf("failpoint %s not listed", want)
		}
	}
}

// The delivery loop alone (`outbox deliver` without --once) is a daemon
// too: a signal is how it is stopped, so it exits 0 and says what it kept.
func TestDeliverLoopStopsGracefully(t *testing.T) {
	home := homeFor(t)
	cmd := exec.Command(binary, "outbox", "deliver")
	cmd.Env = append(os.Environ(), "TIDEMARK_HOME="+home)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), "Ctrl-C to stop"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the loop never said it started:\n%s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("delivery loop exit: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped delivering") {
		t.Fatalf("no shutdown message:\n%s", stderr.String())
	}
}

// TestDaemonStopsGracefully starts the daemon, waits for its first run to
// settle, sends SIGTERM, and checks that it exits cleanly with no run left
// active.
func TestDaemonStopsGracefully(t *testing.T) {
	sqltest.ForEachBackend(t, func(t *testing.T, b sqltest.Backend) {
		repo := mustRepo(t, 2)
		db := b.NewURL(t)
		mustOK(t, tm(t, nil, "--db", db, "source", "add", repo, "--name", "repo"))
		cmd := exec.Command(binary, "--db", db, "run", "--poll", "50ms", "--workers", "2")
		cmd.Env = append(os.Environ(), "TIDEMARK_HOME="+homeFor(t))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		var out strings.Builder
		for !strings.Contains(out.String(), "2 new") {
			n, err := stdout.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				cmd.Process.Kill()
				t.Fatalf("daemon output ended before its first run: %v\n%s\n%s", err, out.String(), stderr.String())
			}
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("daemon exit: %v\n%s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "every run in flight settled or failed") {
			t.Fatalf("no shutdown message:\n%s", stderr.String())
		}
		s := showSource(t, db, "repo")
		for _, r := range s.Runs {
			if r.Status == "active" {
				t.Fatalf("active run after shutdown: %+v", s.Runs)
			}
		}
	})
}

// syncBuffer is a buffer a child process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
