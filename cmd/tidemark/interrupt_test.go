package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
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
