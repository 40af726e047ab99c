package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/pipeline"
)

// Each command line that cannot be run as written exits with the code the
// README's table gives it, and says what was wrong.
func TestExitCodes(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"bogus"}, tidemark.ExitInvalid, `unknown command "bogus" for "tidemark"`},
		{[]string{"sorce", "list"}, tidemark.ExitInvalid, `"source"`},
		{[]string{"source", "bogus"}, tidemark.ExitInvalid, `unknown command "bogus" for "tidemark source"`},
		{[]string{"outbox", "intents", "bogus"}, tidemark.ExitInvalid, `unknown command "bogus"`},
		{[]string{"run", "extra"}, tidemark.ExitInvalid, `unknown command "extra" for "tidemark run"`},
		{[]string{"source", "show"}, tidemark.ExitInvalid, "accepts 1 arg(s), received 0"},
		{[]string{"source", "show", "a", "b"}, tidemark.ExitInvalid, "accepts 1 arg(s), received 2"},
		{[]string{"source", "list", "--bogus"}, tidemark.ExitInvalid, "unknown flag: --bogus"},
		{[]string{"--log-level", "loud", "source", "list"}, tidemark.ExitInvalid, `invalid --log-level "loud"`},
		{[]string{"run", "--once", "--workers", "0"}, tidemark.ExitInvalid, `"--workers" flag: must be from 1 to 256`},
		{[]string{"run", "--once", "--workers", "100000"}, tidemark.ExitInvalid, `"--workers" flag: must be from 1 to 256`},
		{[]string{"run", "--once", "--lease", "1ns"}, tidemark.ExitInvalid, `"--lease" flag: must be from 1s to 24h0m0s`},
		{[]string{"run", "--once", "--lease", "-1m"}, tidemark.ExitInvalid, `"--lease" flag: must be from 1s`},
		{[]string{"run", "--once", "--lease", "soon"}, tidemark.ExitInvalid, "not a duration"},
		{[]string{"run", "--once", "--poll", "0s"}, tidemark.ExitInvalid, `"--poll" flag: must be from`},
		{[]string{"runs", "list", "--limit", "0"}, tidemark.ExitInvalid, `"--limit" flag: must be from 1 to 100000`},
		{[]string{"events", "list", "--limit", "-5"}, tidemark.ExitInvalid, `"--limit" flag: must be from 1`},
		{[]string{"publish", "summaries", "--limit", "many"}, tidemark.ExitInvalid, "not a whole number"},
		{[]string{"outbox", "deliver", "--once", "--lease", "1ms"}, tidemark.ExitInvalid, `"--lease" flag: must be from 1s`},
		{[]string{"runs", "list", "--source", "nope"}, tidemark.ExitNotFound, `source "nope": not found`},
		{[]string{"runs", "list", "--after", "nope"}, tidemark.ExitNotFound, "run nope: not found"},
		{[]string{"events", "list", "--source", "nope"}, tidemark.ExitNotFound, `source "nope": not found`},
		{[]string{"outbox", "intents", "list", "--lane", "nope"}, tidemark.ExitNotFound, `lane "nope": not found`},
		{[]string{"outbox", "gaps", "--lane", "nope"}, tidemark.ExitNotFound, `lane "nope": not found`},
		{[]string{"outbox", "lane", "history", "nope"}, tidemark.ExitNotFound, `lane "nope": not found`},
		{[]string{"events", "list", "--run", "nope"}, tidemark.ExitNotFound, "run nope: not found"},
		{[]string{"events", "list", "--after", "nope"}, tidemark.ExitNotFound, "event nope: not found"},
		{[]string{"publish", "summaries", "--event", "nope"}, tidemark.ExitNotFound, "event nope: not found"},
		{[]string{"run", "--once", "--track", filepath.Join(file, "gone")}, tidemark.ExitInvalid, "does not exist"},
		{[]string{"run", "--once", "--track", filepath.Dir(file)}, tidemark.ExitInvalid, "not a git repository"},
		{[]string{"serve", "--addr", "nohost"}, tidemark.ExitInvalid, `invalid --addr "nohost": want HOST:PORT`},
		{[]string{"serve", "--addr", "127.0.0.1:99999"}, tidemark.ExitInvalid, "is not a number from 0 to 65535"},
		{[]string{"serve", "--addr", busy.Addr().String()}, tidemark.ExitUnavailable, "is in use"},
		{[]string{"--home", file, "source", "list"}, tidemark.ExitInvalid, "cannot use it as the data directory"},
		{[]string{"--home", filepath.Join(file, "sub"), "publish"}, tidemark.ExitInvalid, "choose a writable directory with --home"},
		{[]string{"--home", file, "--db", "sqlite:" + filepath.Join(file, "sub", "x.db"), "source", "list"}, tidemark.ExitInvalid, "cannot create its directory"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := tc.args
			if args[0] != "--home" {
				args = append([]string{"--home", t.TempDir()}, args...)
			}
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstderr:\n%s", code, tc.code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.says) {
				t.Errorf("stderr does not say %q:\n%s", tc.says, errb.String())
			}
			if strings.Contains(errb.String(), "internal error") {
				t.Errorf("called an internal error:\n%s", errb.String())
			}
			first, _, _ := strings.Cut(errb.String(), "\n")
			if n := strings.Count(first, "tidemark: "); n != 1 {
				t.Errorf("the message says \"tidemark: \" %d times, want once: %s", n, first)
			}
		})
	}
}

// A group of commands named alone shows its help and succeeds.
func TestGroupAloneShowsHelp(t *testing.T) {
	out := mustTidemark(t, 0, "--home", t.TempDir(), "source")
	if !strings.Contains(out, "Available Commands") {
		t.Fatalf("no help:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	out := mustTidemark(t, 0, "version")
	if !strings.HasPrefix(out, "tidemark ") || !strings.Contains(out, runtime.Version()) {
		t.Fatalf("version printed %q", out)
	}
	var v pipeline.Version
	if err := json.Unmarshal([]byte(mustTidemark(t, 0, "version", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Version == "" || v.GoVersion != runtime.Version() {
		t.Fatalf("version --json: %+v", v)
	}
}

// A daemon whose metrics address is taken (another daemon on the host with
// the same environment) refuses to start, naming the setting it came
// from, not serve's --addr.
func TestRunWithItsMetricsAddressInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	t.Setenv("TIDEMARK_METRICS_ADDR", busy.Addr().String())
	var out, errb bytes.Buffer
	code := run([]string{"--home", t.TempDir(), "run"}, &out, &errb)
	if code != tidemark.ExitUnavailable || !strings.Contains(errb.String(), "TIDEMARK_METRICS_ADDR "+busy.Addr().String()+" is in use") ||
		strings.Contains(errb.String(), "--addr") || strings.Contains(errb.String(), "tidemark serve") {
		t.Fatalf("exit %d, want %d naming TIDEMARK_METRICS_ADDR only:\n%s", code, tidemark.ExitUnavailable, errb.String())
	}
}
