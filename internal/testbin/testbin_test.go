package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

func TestSweepRemovesOnlyTheDirectoriesOfGoneProcesses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signal 0 is Unix's probe")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{
		"x-gone":    strconv.Itoa(done.Process.Pid),
		"x-parent":  strconv.Itoa(os.Getppid()),
		"x-mine":    strconv.Itoa(os.Getpid()),
		"x-nopid":   "",
		"y-gone":    strconv.Itoa(done.Process.Pid), // another prefix
		"x-garbage": "not a pid",
	}
	for name, pid := range dirs {
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if pid != "" {
			if err := os.WriteFile(filepath.Join(d, pidFile), []byte(pid), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	Sweep("x-")
	for name := range dirs {
		_, err := os.Stat(filepath.Join(tmp, name))
		if want := name != "x-gone"; (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", name, err == nil, want)
		}
	}
}
