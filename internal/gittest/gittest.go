// Package gittest makes git repositories for tests.
package gittest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Git runs git in dir as a fixed author and returns its output, trimmed;
// a failure fails the test.
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Repo makes a repository on branch main with one commit per message, each
// adding a file of its own, and returns its path. It skips the test where
// git is not installed.
func Repo(tb testing.TB, messages ...string) string {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("git is not installed")
	}
	dir := tb.TempDir()
	Git(tb, dir, "init", "-q", "-b", "main")
	for i, msg := range messages {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(msg), 0o644); err != nil {
			tb.Fatal(err)
		}
		Git(tb, dir, "add", ".")
		Git(tb, dir, "commit", "-q", "-m", msg)
	}
	return dir
}

// Changes are n commit messages "change 0" … "change n-1".
func Changes(n int) []string {
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = fmt.Sprintf("change %d", i)
	}
	return msgs
}
