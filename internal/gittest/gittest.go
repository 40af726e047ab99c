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

// History builds a repository of any shape (merges of any number of
// parents, several roots) in one git fast-import, far quicker than one
// command a commit. Commits are named by the int Commit returns.
type History struct {
	tb     testing.TB
	stream strings.Builder
	n      int
}

// NewHistory starts an empty history. It skips the test where git is not
// installed.
func NewHistory(tb testing.TB) *History {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("git is not installed")
	}
	return &History{tb: tb}
}

// Commit adds a commit with the given parents (none: a root) and a message
// of its own, and returns its name. Commits are dated a minute apart in
// the order they are added.
func (h *History) Commit(msg string, parents ...int) int {
	return h.CommitAt(1700000000+(h.n+1)*60, msg, parents...)
}

// CommitAt is Commit with the committer date at (Unix seconds): a history
// whose dates run backwards (a rebase, a skewed clock) is built with it.
func (h *History) CommitAt(at int, msg string, parents ...int) int {
	h.n++
	// The scratch branch is reset before every commit, so a commit's
	// parents are exactly the ones named.
	fmt.Fprintf(&h.stream, "reset refs/heads/gittest-build\ncommit refs/heads/gittest-build\nmark :%d\n", h.n)
	fmt.Fprintf(&h.stream, "committer Ada <ada@example.com> %d +0000\ndata %d\n%s\n", at, len(msg), msg)
	for i, p := range parents {
		if p <= 0 || p >= h.n {
			h.tb.Fatalf("gittest: commit %d names parent %d, not an earlier commit", h.n, p)
		}
		if i == 0 {
			fmt.Fprintf(&h.stream, "from :%d\n", p)
		} else {
			fmt.Fprintf(&h.stream, "merge :%d\n", p)
		}
	}
	fmt.Fprintf(&h.stream, "M 644 inline f%d\ndata %d\n%s\n\n", h.n%7, len(msg)+1, msg+"\n")
	return h.n
}

// Line adds n commits, each the child of the one before, the first a child
// of parent (0: a root), named prefix+" 1" … prefix+" n", and returns the
// last (parent when n is 0).
func (h *History) Line(parent int, prefix string, n int) int {
	for i := 1; i <= n; i++ {
		msg := fmt.Sprintf("%s %d", prefix, i)
		if parent == 0 {
			parent = h.Commit(msg)
		} else {
			parent = h.Commit(msg, parent)
		}
	}
	return parent
}

// Len is the number of commits added so far.
func (h *History) Len() int { return h.n }

// Write makes the history in a new repository whose branch main points at
// commit head, and returns the repository's path.
func (h *History) Write(head int) string {
	h.tb.Helper()
	dir := h.tb.TempDir()
	Git(h.tb, dir, "init", "-q", "-b", "main")
	h.Extend(dir, head)
	return dir
}

// Extend writes the commits added since the last Write or Extend into the
// repository at dir (the same history, grown) and points main at head.
func (h *History) Extend(dir string, head int) {
	h.tb.Helper()
	marks := filepath.Join(dir, ".git", "gittest-marks")
	stream := h.stream.String() + fmt.Sprintf("reset refs/heads/main\nfrom :%d\n\n", head)
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet", "--force",
		"--import-marks-if-exists="+marks, "--export-marks="+marks)
	cmd.Stdin = strings.NewReader(stream)
	if out, err := cmd.CombinedOutput(); err != nil {
		h.tb.Fatalf("git fast-import: %v\n%s", err, out)
	}
	h.stream.Reset()
	Git(h.tb, dir, "update-ref", "-d", "refs/heads/gittest-build")
}

// Hash returns the hash of commit c, written into the repository at dir.
func (h *History) Hash(dir string, c int) string {
	h.tb.Helper()
	marks, err := os.ReadFile(filepath.Join(dir, ".git", "gittest-marks"))
	if err != nil {
		h.tb.Fatal(err)
	}
	want := fmt.Sprintf(":%d ", c)
	for _, line := range strings.Split(string(marks), "\n") {
		if hash, ok := strings.CutPrefix(line, want); ok {
			return hash
		}
	}
	h.tb.Fatalf("gittest: commit %d is not written in %s", c, dir)
	return ""
}
