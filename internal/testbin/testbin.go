// Package testbin builds the tidemark binary for tests that must kill a
// real process, into a scratch directory that a killed or timed-out test
// run leaves behind and the next run removes.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// pidFile names, inside a scratch directory, the process that owns it.
const pidFile = "owner.pid"

// Build builds pkg into a new directory under the system's temporary
// directory whose name starts with prefix, and returns the binary's path
// and a function that removes the directory. Directories of prefix left
// by test processes that are gone (a run killed by go test's timeout
// never reaches its cleanup) are removed first.
func Build(prefix, pkg string) (string, func(), error) {
	Sweep(prefix)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		cleanup()
		return "", nil, err
	}
	bin := filepath.Join(dir, "tidemark")
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, cleanup, nil
}

// Sweep removes the scratch directories of prefix whose owning process is
// gone. A directory whose owner cannot be read is left alone, as is one
// whose owner may still run.
func Sweep(prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, pidFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid == os.Getpid() || !gone(pid) {
			continue
		}
		os.RemoveAll(dir)
	}
}

// gone reports whether no process pid exists. Where the system cannot
// say (signal 0 is Unix's probe), it answers false.
func gone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}
