// Package git fetches the commits of a git repository since a cursor
// commit, using the git binary. The repository is a local path, or a
// remote URL reachable by git (https://, ssh://, git://, file://, or
// user@host:path), kept as a bare mirror under the fetcher's cache
// directory and fetched at the start of every run; a remote that cannot be
// reached is unreachable, never an empty run. Config "branch" selects the
// branch to follow. Each commit becomes an item whose frozen
// evidence is its metadata, message and diffstat in a canonical text form.
// Commits are read oldest first (parents before children), at most
// MaxCommits a run. The cursor stands for exactly the commits read: they
// and all their ancestors (see Cursor). So a run that stops early, even
// inside the two sides of a merge, never moves the cursor past a commit
// it did not read nor back over one it did (and says More, so the source
// is due again at once), and a cursor commit that is no longer an
// ancestor of the branch head (a rewritten history) fails the run as
// invalid rather than skip or repeat commits.
// Every connection to a remote obeys the address guard of fetch/httpx
// (see guard.go): a remote on a private address is refused before any
// connection is made, unless private addresses are allowed.
package git

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tidemark/tidemark"
	dirkind "github.com/tidemark/tidemark/fetch/dir"
	"github.com/tidemark/tidemark/fetch/httpx"
)

// Fetcher reads commits with the git binary.
type Fetcher struct {
	// Git is the git binary (default "git").
	Git string
	// MaxCommits bounds the commits admitted per run (default 500); the
	// rest wait for the next run, ahead of the cursor.
	MaxCommits int
	// CacheDir holds the bare mirrors of remote repositories (default:
	// the user's cache directory, under tidemark/git).
	CacheDir string

	// Guard is the address guard every connection to a remote obeys (see
	// guard.go); nil refuses every private, loopback and link-local
	// address.
	Guard *httpx.Client

	mu           sync.Mutex
	mirrors      map[string]*sync.Mutex
	defaultGuard *httpx.Client
}

// Config keys understood in a source's config.
const (
	// ConfigBranch selects the branch or ref to follow (default HEAD).
	ConfigBranch = "branch"
)

func (f *Fetcher) git() string {
	if f.Git == "" {
		return "git"
	}
	return f.Git
}

func (f *Fetcher) max() int {
	if f.MaxCommits <= 0 {
		return 500
	}
	return f.MaxCommits
}

// invocation is what a git command gets beyond its arguments: config
// given with -c, and environment variables.
type invocation struct {
	config []string // key=value
	env    []string
}

// scrubbedEnv are variables of our environment git must not see: proxies
// (a proxy would dial past the address guard), proxy exceptions, and
// settings that would replace the ones given here.
var scrubbedEnv = []string{"http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy",
	"GIT_PROXY_COMMAND", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_ALLOW_PROTOCOL",
	"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"}

// keptEnv are the only variables of our environment git gets (a name
// ending in _ stands for every name it starts): what git, ssh, curl and
// a credential helper read to find the user's files, agent, config and
// certificate authorities. Everything else stays with tidemark: its
// database URL, its S3 and LLM keys, the variables lanes read their
// tokens from. Proxies and GIT_SSH* are kept from git too (scrubbedEnv):
// the address guard sets its own.
var keptEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE", "LC_",
	"SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_ASKPASS", "SSH_ASKPASS_REQUIRE", "DISPLAY", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR",
	"GIT_ASKPASS", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR",
	"GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "GIT_SSL_NO_VERIFY", "GIT_SSL_CERT", "GIT_SSL_KEY", "GIT_TRACE", "GIT_TRACE_", "GIT_CURL_VERBOSE",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE",
	// Windows: where the system, the user's profile and temporary files are.
	"SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA",
	"PROGRAMDATA", "TEMP", "TMP"}

func scrub(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if matchesEnv(k, keptEnv) && !matchesEnv(k, scrubbedEnv) {
			out = append(out, kv)
		}
	}
	return out
}

// matchesEnv reports whether the variable k is one of names, in any
// case, or starts one that ends in _ (GIT_TRACE matches GIT_TRACE and
// GIT_TRACE_PACKET).
func matchesEnv(k string, names []string) bool {
	for _, s := range names {
		if strings.EqualFold(k, s) || (strings.HasSuffix(s, "_") && strings.HasPrefix(strings.ToUpper(k), s)) {
			return true
		}
	}
	return false
}

// run runs a git command on local data: no transport is allowed but
// file (a repository's alternates).
func (f *Fetcher) run(ctx context.Context, dir string, stdin string, args ...string) ([]byte, error) {
	return f.exec(ctx, dir, stdin, invocation{env: []string{"GIT_ALLOW_PROTOCOL=file"}}, args...)
}

func (f *Fetcher) exec(ctx context.Context, dir string, stdin string, inv invocation, args ...string) ([]byte, error) {
	var pre []string
	if dir != "" {
		pre = append(pre, "-C", dir)
	}
	for _, kv := range inv.config {
		pre = append(pre, "-c", kv)
	}
	// A worker without git (a minimal container image) cannot serve any
	// git source; another worker may. Checked here, at the one place git
	// runs, so a remote is refused by the address guard first.
	if _, err := exec.LookPath(f.git()); err != nil {
		return nil, tidemark.CannotServe("git is not installed on this worker", err)
	}
	cmd := exec.CommandContext(ctx, f.git(), append(pre, args...)...)
	cmd.Env = append(scrub(cmd.Environ()), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	cmd.Env = append(cmd.Env, inv.env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, ctx.Err()
			}
			return nil, tidemark.Unreachable("git timed out", 0, ctx.Err())
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, fmt.Errorf("run git: %w", err) // our own failure: no git binary
		}
		return nil, &gitError{args: args, msg: msg, code: ee.ExitCode(), err: err}
	}
	return out, nil
}

// IsRemote reports whether a location is a URL for git rather than a
// local path.
func IsRemote(loc string) bool {
	if strings.Contains(loc, "://") {
		return true
	}
	// scp-like syntax: [user@]host:path, with no slash before the colon.
	i := strings.Index(loc, ":")
	return i > 1 && !strings.Contains(loc[:i], "/")
}

func (f *Fetcher) cacheDir() (string, error) {
	if f.CacheDir != "" {
		return f.CacheDir, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("git: no cache directory for mirrors: %w", err)
	}
	return filepath.Join(d, "tidemark", "git"), nil
}

// repo returns the directory to read the source's history from: the
// location itself, or the remote's bare mirror, brought up to date. For a
// mirror of a source that follows HEAD, the mirror's HEAD follows the
// remote's (see followHead); note then says where it moved.
func (f *Fetcher) repo(ctx context.Context, src tidemark.Source) (dir, note string, err error) {
	if !IsRemote(src.Location) {
		// A local repository another worker may see (a shared volume)
		// is not broken because this one cannot.
		if _, err := os.Stat(src.Location); errors.Is(err, fs.ErrNotExist) {
			return "", "", tidemark.CannotServe("repository "+src.Location+" not found on this worker", err)
		} else if errors.Is(err, fs.ErrPermission) {
			return "", "", permissionError(src.Location, src.Location)
		}
		return src.Location, "", nil
	}
	base, err := f.cacheDir()
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256([]byte(src.Location))
	dir = filepath.Join(base, hex.EncodeToString(sum[:12])+".git")
	lock := f.mirrorLock(dir)
	lock.Lock()
	defer lock.Unlock()
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		// The URL is given rather than "origin", so that it is the one the
		// guard checked (see runRemote); the refspec is the mirror's.
		fetch := func(url string) []string {
			return []string{"fetch", "--prune", "--quiet", "--", url, "+refs/*:refs/*"}
		}
		if _, err := f.runRemote(ctx, src.Location, dir, fetch); err != nil {
			return "", "", reach(src.Location, err)
		}
		if src.Config[ConfigBranch] != "" {
			return dir, "", nil
		}
		note, err := f.followHead(ctx, src, dir)
		if err != nil {
			return "", "", err
		}
		return dir, note, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", "", fmt.Errorf("git: mirror cache: %w", err)
	}
	tmp, err := os.MkdirTemp(base, "clone-")
	if err != nil {
		return "", "", fmt.Errorf("git: mirror cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	clone := func(url string) []string {
		return []string{"clone", "--mirror", "--quiet", "--", url, filepath.Join(tmp, "m.git")}
	}
	if _, err := f.runRemote(ctx, src.Location, "", clone); err != nil {
		return "", "", reach(src.Location, err)
	}
	if err := os.Rename(filepath.Join(tmp, "m.git"), dir); err != nil {
		return "", "", fmt.Errorf("git: mirror cache: %w", err)
	}
	return dir, "", nil
}

// followHead points the mirror's HEAD where the remote's HEAD points now.
// A clone takes the remote's HEAD once and a fetch never updates it, so a
// remote that renames its default branch (master to main, the old one
// deleted) would leave the mirror's HEAD naming a branch that is gone, and
// a source that follows HEAD stuck on it. It returns a note saying where
// HEAD moved, or "" when it did not. A remote that does not say where its
// HEAD points (a detached HEAD, an old server) leaves the mirror's as it
// is.
func (f *Fetcher) followHead(ctx context.Context, src tidemark.Source, dir string) (string, error) {
	out, err := f.runRemote(ctx, src.Location, dir, func(url string) []string {
		return []string{"ls-remote", "--symref", "--", url, "HEAD"}
	})
	if err != nil {
		return "", reach(src.Location, err)
	}
	target := ""
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "ref: "); ok {
			if ref, name, ok := strings.Cut(rest, "\t"); ok && name == "HEAD" {
				target = ref
			}
		}
	}
	if !strings.HasPrefix(target, "refs/heads/") {
		return "", nil
	}
	cur := "a detached HEAD"
	if out, err := f.run(ctx, dir, "", "symbolic-ref", "--quiet", "HEAD"); err == nil {
		cur = strings.TrimSpace(string(out))
	}
	if cur == target {
		return "", nil
	}
	if _, err := f.run(ctx, dir, "", "symbolic-ref", "HEAD", target); err != nil {
		return "", tidemark.Unusable(fmt.Sprintf("the remote's HEAD names %q, which cannot be followed", target), err)
	}
	return fmt.Sprintf("the remote's HEAD moved from %s to %s: following it", cur, target), nil
}

// unreadableDir returns the first directory of the local repository at
// loc that git needs and this process may not read or search (the
// repository itself, its .git, objects or refs), or "" when there is none.
func unreadableDir(loc string) string {
	for _, p := range []string{loc, filepath.Join(loc, ".git"), filepath.Join(loc, ".git", "objects"), filepath.Join(loc, ".git", "refs"),
		filepath.Join(loc, "objects"), filepath.Join(loc, "refs")} {
		d, err := os.Open(p)
		if errors.Is(err, fs.ErrPermission) {
			return p
		}
		if err != nil {
			continue // not this layout (a bare repository has no .git)
		}
		_, err = d.Readdirnames(1)
		d.Close()
		if _, serr := os.Stat(filepath.Join(p, ".")); errors.Is(err, fs.ErrPermission) || errors.Is(serr, fs.ErrPermission) {
			return p
		}
	}
	return ""
}

// permissionError is a local repository at loc that this process may not
// read (dir, a directory of it, denies it): our own failure, as a dir
// source's root it may not read is, and never "not found".
func permissionError(loc, dir string) error {
	return fmt.Errorf("git: cannot read the repository %s: %s is not readable by this process (permission denied): "+
		"make it readable by the user tidemark runs as: %w", loc, dir, fs.ErrPermission)
}

// ownedByAnother reports whether git refused a repository for being
// owned by another user than the one it runs as ("detected dubious
// ownership", git 2.35.2 and later), until it is named safe.
func ownedByAnother(ge *gitError) bool { return strings.Contains(ge.msg, "dubious ownership") }

// ownershipError says that git refuses a local repository owned by
// another user, and how to let it: our own failure, as a repository this
// process may not read is (permissionError), never a branch not found.
func ownershipError(loc string, err error) error {
	msg := fmt.Sprintf("git: git refuses the repository %s: it is owned by another user than the one tidemark runs as "+
		"(git's \"dubious ownership\"): name it safe in that user's git configuration "+
		"(git config --global --add safe.directory %s), or give it to that user", loc, loc)
	if err == nil {
		return errors.New(msg)
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// reach classifies a failed clone or fetch: the remote could not be
// reached (or refused us), which a later run may get past. What git said
// is in err, and said there only.
func reach(loc string, err error) error {
	var ge *gitError
	if errors.As(err, &ge) {
		return tidemark.Unreachable("git could not fetch "+loc, 0, err)
	}
	return err
}

func (f *Fetcher) mirrorLock(dir string) *sync.Mutex {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mirrors == nil {
		f.mirrors = map[string]*sync.Mutex{}
	}
	m := f.mirrors[dir]
	if m == nil {
		m = &sync.Mutex{}
		f.mirrors[dir] = m
	}
	return m
}

type gitError struct {
	args []string
	msg  string
	code int
	err  error
}

// Error names the git command (not its arguments: a format full of
// control characters, revisions given on standard input) and what git
// said.
func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: %s", e.cmd(), e.said())
}

// cmd is the git command that failed ("rev-parse").
func (e *gitError) cmd() string {
	if len(e.args) == 0 {
		return ""
	}
	return e.args[0]
}

// said is what git said on standard error, its lines joined by "; " and
// each said once (git repeats an object it could not read).
func (e *gitError) said() string {
	var lines []string
	for _, l := range strings.Split(e.msg, "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return strings.Join(lines, "; ")
}
func (e *gitError) Unwrap() error { return e.err }

// Head returns the commit the source's branch points at (for a remote,
// after fetching it).
func (f *Fetcher) Head(ctx context.Context, src tidemark.Source) (string, error) {
	ctx = httpx.WithAllowPrivate(ctx, src.AllowPrivate) // the source's own setting, never the process's
	dir, _, err := f.repo(ctx, src)
	if err != nil {
		return "", err
	}
	return f.head(ctx, src, dir)
}

func (f *Fetcher) head(ctx context.Context, src tidemark.Source, dir string) (string, error) {
	ref := src.Config[ConfigBranch]
	if ref == "" {
		ref = "HEAD"
	}
	out, err := f.run(ctx, dir, "", "rev-parse", "--verify", "--end-of-options", ref+"^{commit}")
	if err != nil {
		var ge *gitError
		if errors.As(err, &ge) {
			if ownedByAnother(ge) {
				return "", ownershipError(src.Location, err)
			}
			if strings.Contains(ge.msg, "not a git repository") || strings.Contains(ge.msg, "cannot change to") {
				if !IsRemote(src.Location) {
					if p := unreadableDir(src.Location); p != "" {
						return "", permissionError(src.Location, p)
					}
				}
				return "", tidemark.Unreachable("repository not found at "+src.Location, 0, err)
			}
			if ref == "HEAD" {
				if out, err := f.run(ctx, dir, "", "symbolic-ref", "--quiet", "HEAD"); err == nil {
					return "", tidemark.Unusable(fmt.Sprintf("HEAD names %s, which is not in %s (no commit on it yet, or the branch was renamed or deleted)",
						strings.TrimSpace(string(out)), where(src, dir)), nil)
				}
			}
			return "", tidemark.Unusable(fmt.Sprintf("branch %s not found in %s (renamed or deleted?): to follow another, "+
				"set the source's config branch (source set NAME --config branch=NEW)", ref, where(src, dir)), err)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Cursor is what a git cursor stands for: the commits read so far, a set
// that holds every ancestor of each commit in it, written as its edge (the
// commits read that no commit read has as a parent), full hashes sorted
// and joined by commas. A history read to its head has one commit at its
// edge, the head, so the cursor is that commit's hash, as a cursor has
// always been; a run that stops inside the sides of a merge leaves one
// commit per side. The commits ahead of the cursor are those of the
// branch that are none of these nor their ancestors.
type Cursor []string

// ParseCursor reads a cursor; "" is the cursor before the first commit.
func ParseCursor(s string) Cursor {
	var c Cursor
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			c = append(c, h)
		}
	}
	return c
}

func (c Cursor) String() string {
	s := slices.Clone(c)
	sort.Strings(s)
	return strings.Join(slices.Compact(s), ",")
}

// check refuses a cursor that is not commit hashes (full, hexadecimal):
// what it holds goes to git's standard input as revisions, and a name or
// an option there would mean something else.
func (c Cursor) check() error {
	for _, h := range c {
		if (len(h) != 40 && len(h) != 64) || strings.Trim(h, "0123456789abcdef") != "" {
			return tidemark.Unusable(fmt.Sprintf("cursor %q is not a list of full commit hashes; skip to a commit of the branch to resume", h), nil)
		}
	}
	return nil
}

// exclusions are rev-list's arguments, one a line for --stdin, that leave
// out the commits a cursor stands for.
func (c Cursor) exclusions() string {
	var b strings.Builder
	for _, h := range c {
		b.WriteString("^" + h + "\n")
	}
	return b.String()
}

// advance returns the cursor that stands for c's commits and the window
// read after it: a window listed parents first after c holds, with c,
// every ancestor of its commits, so the edge is c and the window less
// every commit one of the window's commits has as a parent.
func (c Cursor) advance(window []listed) Cursor {
	inner := map[string]bool{}
	for _, w := range window {
		for _, p := range w.parents {
			inner[p] = true
		}
	}
	var next Cursor
	for _, h := range c {
		if !inner[h] {
			next = append(next, h)
		}
	}
	for _, w := range window {
		if !inner[w.hash] {
			next = append(next, w.hash)
		}
	}
	sort.Strings(next)
	return slices.Compact(next)
}

// listed is a commit as rev-list --parents lists it.
type listed struct {
	hash    string
	parents []string
}

// Fetch implements tidemark.Fetcher.
func (f *Fetcher) Fetch(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
	ctx = httpx.WithAllowPrivate(ctx, src.AllowPrivate) // the source's own setting, never the process's
	dir, note, err := f.repo(ctx, src)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	res, err := f.fetch(ctx, src, dir, cursor)
	if note != "" {
		// Said by the run however it ends: the next one finds HEAD where
		// this one left it, and would not say it.
		res.Notes = append(res.Notes, note)
		var fe *tidemark.FetchError
		if errors.As(err, &fe) {
			fe.Reason = note + "; " + fe.Reason
		}
	}
	return res, err
}

func (f *Fetcher) fetch(ctx context.Context, src tidemark.Source, dir, cursor string) (tidemark.FetchResult, error) {
	head, err := f.head(ctx, src, dir)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	if head == cursor {
		return tidemark.FetchResult{Cursor: cursor}, nil
	}
	read := ParseCursor(cursor)
	if err := read.check(); err != nil {
		return tidemark.FetchResult{}, err
	}
	if err := f.descends(ctx, src, dir, read, head); err != nil {
		return tidemark.FetchResult{}, err
	}
	if slices.Contains(read, head) {
		// Every other commit of the cursor is an ancestor of the head:
		// all is read.
		return tidemark.FetchResult{Cursor: head}, nil
	}
	out, err := f.run(ctx, dir, head+"\n"+read.exclusions(), "rev-list", "--reverse", "--topo-order", "--parents", "--stdin")
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	var list []listed
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if fields := strings.Fields(line); len(fields) > 0 {
			list = append(list, listed{hash: fields[0], parents: fields[1:]})
		}
	}
	if list, err = f.unread(ctx, src, dir, read, list); err != nil {
		return tidemark.FetchResult{}, err
	}
	if len(list) == 0 {
		// Impossible once the head is not in the cursor and the cursor's
		// commits are its ancestors; refuse rather than settle on nothing.
		return tidemark.FetchResult{}, tidemark.Unusable(fmt.Sprintf("git listed no commits between %s and %.12s", read.short(), head), nil)
	}
	more := len(list) > f.max()
	if more {
		list = list[:f.max()]
	}
	hashes := make([]string, len(list))
	for i, l := range list {
		hashes[i] = l.hash
	}
	items, err := f.commits(ctx, dir, hashes)
	if ge := (*gitError)(nil); errors.As(err, &ge) {
		// Commits rev-list just listed that git cannot show: an object
		// of theirs (a tree, a blob) is missing or corrupt.
		return tidemark.FetchResult{}, damaged(src, dir, ge)
	}
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	if len(items) != len(hashes) {
		return tidemark.FetchResult{}, tidemark.Unusable(fmt.Sprintf("git log returned %d of %d commits", len(items), len(hashes)), nil)
	}
	return tidemark.FetchResult{Items: items, Cursor: read.advance(list).String(), Declared: len(hashes), More: more}, nil
}

// unread drops from list (rev-list's HEAD ^CURSOR, parents first) the
// commits the cursor stands for all the same. rev-list's walk stops by
// commit dates: in a history whose dates run backwards (a rebase, a
// skewed clock) it lists ancestors of the cursor's commits as unread, and
// a run would read them again, its window full of old commits. Whether a
// commit is one is asked of merge-base, which walks the graph to the end,
// and only where it may be: a commit with a parent listed unread, or with
// a parent that is one of the cursor's commits (none of which is an
// ancestor of another), is unread. In a history whose dates run forward
// that asks about the first commit of each side branch forked below the
// cursor, or about nothing.
func (f *Fetcher) unread(ctx context.Context, src tidemark.Source, dir string, read Cursor, list []listed) ([]listed, error) {
	if len(read) == 0 {
		return list, nil
	}
	edge := make(map[string]bool, len(read))
	for _, c := range read {
		edge[c] = true
	}
	unread := make(map[string]bool, len(list))
	out := make([]listed, 0, len(list))
	for _, l := range list {
		known := false
		for _, p := range l.parents {
			if unread[p] || edge[p] {
				known = true
				break
			}
		}
		if !known {
			isRead, err := f.readBy(ctx, src, dir, l.hash, read)
			if err != nil {
				return nil, err
			}
			if isRead {
				continue
			}
		}
		unread[l.hash] = true
		out = append(out, l)
	}
	return out, nil
}

// readBy reports whether commit is an ancestor of one of the cursor's
// commits: merge-base --independent leaves out of its answer each commit
// that another of those it is given reaches.
func (f *Fetcher) readBy(ctx context.Context, src tidemark.Source, dir, commit string, read Cursor) (bool, error) {
	out, err := f.run(ctx, dir, "", append([]string{"merge-base", "--independent", "--end-of-options", commit}, read...)...)
	if err != nil {
		var ge *gitError
		if errors.As(err, &ge) {
			return false, damaged(src, dir, ge)
		}
		return false, err
	}
	return !slices.Contains(strings.Fields(string(out)), commit), nil
}

// short names a cursor's commits by their first 12 digits.
func (c Cursor) short() string {
	s := make([]string, len(c))
	for i, h := range c {
		s[i] = fmt.Sprintf("%.12s", h)
	}
	return strings.Join(s, ",")
}

// descends checks that head descends from every commit of the cursor. A
// rewritten history (amended, rebased, reset backwards, replaced) is
// invalid, naming both commits: reading what lies between would silently
// skip or repeat commits, and only an operator can say where to resume
// (source skip).
func (f *Fetcher) descends(ctx context.Context, src tidemark.Source, dir string, read Cursor, head string) error {
	if len(read) == 0 {
		return nil
	}
	// One question for all of the cursor's commits: none of them is more
	// than the head holds. Only an answer other than "none" (or a git that
	// could not say: a commit missing) asks commit by commit, to name one.
	var in strings.Builder
	for _, c := range read {
		in.WriteString(c + "^{commit}\n")
	}
	in.WriteString("^" + head + "\n")
	if out, err := f.run(ctx, dir, in.String(), "rev-list", "--count", "--stdin"); err == nil && strings.TrimSpace(string(out)) == "0" {
		return nil
	} else if err != nil && !errors.As(err, new(*gitError)) {
		return err
	}
	// Before calling it a rewrite, rule out what only looks like one: a
	// history git cannot walk to the cursor because the repository is
	// shallow or lost an object. Skipping would then lose commits that
	// are still fine upstream.
	if out, err := f.run(ctx, dir, "", "rev-parse", "--is-shallow-repository"); err == nil && strings.TrimSpace(string(out)) == "true" {
		return tidemark.Unusable(fmt.Sprintf("%s is a shallow clone whose history from %s at %.12s does not reach the cursor %s: "+
			"deepen it (git fetch --unshallow, or --deepen) and run again, and the commits between are read; "+
			"only if its history was rewritten, skip to a commit of the branch", where(src, dir), branch(src), head, read.short()), nil)
	}
	for _, c := range read {
		if _, err := f.run(ctx, dir, "", "cat-file", "-e", "--end-of-options", c+"^{commit}"); err != nil {
			if !errors.As(err, new(*gitError)) {
				return err
			}
			return tidemark.Unusable(fmt.Sprintf("cursor commit %.12s is missing from %s: if upstream still has it, the repository is damaged: %s; "+
				"if its history was rewritten and the commit pruned, skip to a commit of the branch", c, where(src, dir), repair(src, dir)), nil)
		}
	}
	if _, err := f.run(ctx, dir, head+"\n"+read.exclusions(), "rev-list", "--count", "--stdin"); err != nil {
		var ge *gitError
		if errors.As(err, &ge) {
			return damaged(src, dir, ge)
		}
		return err
	}
	for _, c := range read {
		ok, err := f.isAncestor(ctx, dir, c, head)
		if err != nil {
			return err
		}
		if !ok {
			return tidemark.Unusable(fmt.Sprintf("rewritten history: cursor commit %.12s is not an ancestor of %s at %.12s; "+
				"skip to a commit of the branch to resume", c, branch(src), head), nil)
		}
	}
	return nil
}

// where names the repository a source is read from: its location, and
// for a remote the mirror that holds it here.
func where(src tidemark.Source, dir string) string {
	if IsRemote(src.Location) {
		return fmt.Sprintf("the mirror of %s (%s)", src.Location, dir)
	}
	return "the repository " + src.Location
}

// repair says how to mend a repository that lost an object: a mirror is
// tidemark's own copy, cloned again once removed; a local repository is
// the user's.
func repair(src tidemark.Source, dir string) string {
	if IsRemote(src.Location) {
		return "remove " + dir + " and the next run clones it again"
	}
	return "git fsck lists what is missing; restore it (from a backup, or git fetch from a remote that has it) and run again"
}

// damaged is the failure of a repository git could not read (an object
// missing or corrupt): invalid, saying so and how to mend it, never that
// its history was rewritten. What git said is kept, its lines joined.
func damaged(src tidemark.Source, dir string, ge *gitError) error {
	return tidemark.Unusable(fmt.Sprintf("%s is damaged (git %s: %s): %s; the cursor stays where it is",
		where(src, dir), ge.cmd(), ge.said(), repair(src, dir)), nil)
}

// isAncestor reports whether commit a is an ancestor of (or is) commit b;
// a commit missing from the repository is no ancestor.
func (f *Fetcher) isAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	if _, err := f.run(ctx, dir, "", "cat-file", "-e", "--end-of-options", a+"^{commit}"); err != nil {
		var ge *gitError
		if errors.As(err, &ge) {
			return false, nil
		}
		return false, err
	}
	_, err := f.run(ctx, dir, "", "merge-base", "--is-ancestor", "--end-of-options", a, b)
	var ge *gitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ge) && ge.code == 1:
		return false, nil
	}
	return false, err
}

func branch(src tidemark.Source) string {
	if b := src.Config[ConfigBranch]; b != "" {
		return b
	}
	return "HEAD"
}

// DescribeRange says which commits lie between two cursors: those of to
// (a commit) that from does not stand for.
func (f *Fetcher) DescribeRange(ctx context.Context, src tidemark.Source, from, to string) (string, error) {
	ctx = httpx.WithAllowPrivate(ctx, src.AllowPrivate) // the source's own setting, never the process's
	dir, _, err := f.repo(ctx, src)
	if err != nil {
		return "", err
	}
	rangeArg := to
	if from != "" {
		rangeArg = from + ".." + to
	}
	fromCursor := ParseCursor(from)
	if err := fromCursor.check(); err != nil {
		return "", err
	}
	// A move back, to a commit the cursor stands for (one of its commits
	// or an ancestor of one), skips nothing. Asked of merge-base, not
	// counted by rev-list: rev-list's walk stops by commit dates, and a
	// history whose dates run backwards (an ancestor dated after the
	// cursor's commits) would have it count that ancestor as unread.
	for _, c := range fromCursor {
		if slices.Contains(fromCursor, to) {
			break // no move: rev-list counts 0
		}
		back, err := f.isAncestor(ctx, dir, to, c)
		if err != nil {
			return "", err
		}
		if back {
			return fmt.Sprintf("0 commits (%s: a move back, to a commit already read)", rangeArg), nil
		}
	}
	out, err := f.run(ctx, dir, to+"\n"+fromCursor.exclusions(), "rev-list", "--count", "--stdin")
	if err != nil {
		return "", err
	}
	n := strings.TrimSpace(string(out))
	if n == "1" {
		return fmt.Sprintf("1 commit (%s)", rangeArg), nil
	}
	return fmt.Sprintf("%s commits (%s)", n, rangeArg), nil
}

const (
	recordSep = "\x1e"
	fieldSep  = "\x1f"
)

// commits reads metadata, message and numstat of the given commits.
func (f *Fetcher) commits(ctx context.Context, dir string, hashes []string) ([]tidemark.Item, error) {
	format := recordSep + strings.Join([]string{"%H", "%P", "%an", "%ae", "%aI", "%cn", "%ce", "%cI", "%B"}, fieldSep) + fieldSep
	// core.quotePath=false: a file name that is UTF-8 comes as it is, not
	// as octal escapes of its bytes (parseCommit escapes one that is not
	// UTF-8); git still quotes a name with a control character, '"' or
	// '\', which would break the line.
	out, err := f.exec(ctx, dir, strings.Join(hashes, "\n")+"\n",
		invocation{config: []string{"core.quotePath=false"}, env: []string{"GIT_ALLOW_PROTOCOL=file"}},
		"log", "--no-walk=unsorted", "--stdin", "--numstat", "--no-renames", "--format="+format)
	if err != nil {
		return nil, err
	}
	var items []tidemark.Item
	for _, rec := range strings.Split(string(out), recordSep) {
		if strings.TrimSpace(rec) == "" {
			continue
		}
		it, err := parseCommit(rec)
		if err != nil {
			return nil, tidemark.Unusable("unparseable git log output", err)
		}
		items = append(items, it)
	}
	return items, nil
}

func parseCommit(rec string) (tidemark.Item, error) {
	fields := strings.SplitN(rec, fieldSep, 10)
	if len(fields) != 10 {
		return tidemark.Item{}, fmt.Errorf("commit record has %d fields, want 10", len(fields))
	}
	// Evidence is UTF-8 text: what git holds that is not (a message or a
	// name written by a tool that did not check) has U+FFFD for each run
	// of bad bytes, as the other kinds' text has.
	for i := range fields[:9] {
		fields[i] = strings.ToValidUTF8(fields[i], "\uFFFD")
	}
	hash, parents, an, ae, ad, cn, ce, cd, msg, stat := fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6], fields[7], fields[8], fields[9]
	committed, err := time.Parse(time.RFC3339, cd)
	if err != nil {
		return tidemark.Item{}, fmt.Errorf("commit %s: committer date %q: %w", hash, cd, err)
	}
	authored, err := time.Parse(time.RFC3339, ad)
	if err != nil {
		return tidemark.Item{}, fmt.Errorf("commit %s: author date %q: %w", hash, ad, err)
	}
	msg = strings.TrimRight(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	subject, _, _ := strings.Cut(msg, "\n")

	// Canonical evidence: fixed field order, UTC times, normalized line
	// endings, numstat lines sorted by path.
	var b strings.Builder
	fmt.Fprintf(&b, "commit %s\n", hash)
	if parents != "" {
		fmt.Fprintf(&b, "parents %s\n", parents)
	}
	fmt.Fprintf(&b, "author %s <%s> %s\n", an, ae, authored.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "committer %s <%s> %s\n\n", cn, ce, committed.UTC().Format(time.RFC3339))
	for _, line := range strings.Split(msg, "\n") {
		b.WriteString("    " + line + "\n")
	}
	var files []string
	adds, dels := 0, 0
	sc := bufio.NewScanner(strings.NewReader(stat))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		var a, d int
		fmt.Sscanf(parts[0], "%d", &a)
		fmt.Sscanf(parts[1], "%d", &d)
		adds, dels = adds+a, dels+d
		// A file name that is not UTF-8 is escaped as a dir source
		// escapes one, so it reads the same in both.
		files = append(files, fmt.Sprintf("%s\t%s\t%s", parts[0], parts[1], dirkind.Key(parts[2])))
	}
	sort.Strings(files)
	if len(files) > 0 {
		fmt.Fprintf(&b, "\n%d files changed, %d insertions(+), %d deletions(-)\n", len(files), adds, dels)
		for _, f := range files {
			b.WriteString(f + "\n")
		}
	}
	return tidemark.Item{
		Key:        hash,
		Title:      subject,
		OccurredAt: committed.UTC(),
		Evidence:   []byte(b.String()),
	}, nil
}

// LocalRepository returns the directory a local repository's history is
// read from: the top of a work tree, or the repository itself when it is
// bare. Anything else is invalid: a path that does not exist says so,
// rather than that it is not a repository.
func (f *Fetcher) LocalRepository(ctx context.Context, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return "", tidemark.Invalidf("location", path, "does not exist")
	}
	out, err := f.run(ctx, abs, "", "rev-parse", "--is-bare-repository", "--absolute-git-dir")
	if err == nil && strings.HasPrefix(string(out), "false") {
		out, err = f.run(ctx, abs, "", "rev-parse", "--show-toplevel")
		if err == nil {
			return strings.TrimSpace(string(out)), nil
		}
	}
	if err != nil {
		var ge *gitError
		if errors.As(err, &ge) {
			if p := unreadableDir(abs); p != "" {
				return "", tidemark.Invalidf("location", path, "cannot be read: %s is not readable by this process (permission denied); make it readable by the user tidemark runs as", p)
			}
			if ownedByAnother(ge) {
				return "", tidemark.Invalidf("location", path, "%v", ownershipError(path, nil))
			}
			return "", tidemark.Invalidf("location", path, "not a git repository")
		}
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] != "true" {
		return "", tidemark.Invalidf("location", path, "not a git repository")
	}
	return lines[1], nil // bare: the repository itself
}

// Check verifies a new source before it is added: its location is a
// repository git may reach (remote ones through the address guard) and the
// branch it names exists. Without a branch, a repository with no commits
// yet is accepted: its HEAD will exist after the first commit. A remote
// that cannot be reached now is returned as unreachable, for the caller to
// decide.
func (f *Fetcher) Check(ctx context.Context, src tidemark.Source) error {
	ctx = httpx.WithAllowPrivate(ctx, src.AllowPrivate) // the source's own setting, never the process's
	ref, named := branch(src), src.Config[ConfigBranch] != ""
	if !IsRemote(src.Location) {
		if !named {
			return nil
		}
		_, err := f.head(ctx, src, src.Location)
		var fe *tidemark.FetchError
		if errors.As(err, &fe) && fe.Outcome == tidemark.OutcomeInvalid {
			return tidemark.Invalidf("config", ConfigBranch+"="+ref, "no such branch in %s", src.Location)
		}
		return err
	}
	if _, err := parseRemote(src.Location); err != nil {
		return err
	}
	out, err := f.runRemote(ctx, src.Location, "", func(url string) []string { return []string{"ls-remote", "--", url} })
	if err != nil {
		return reach(src.Location, err)
	}
	var refs []string
	for _, line := range strings.Split(string(out), "\n") {
		if _, name, ok := strings.Cut(line, "\t"); ok {
			refs = append(refs, name)
		}
	}
	for _, name := range refs {
		if name == ref || name == "refs/heads/"+ref || name == "refs/tags/"+ref || name == "refs/"+ref {
			return nil
		}
	}
	if !named {
		return nil
	}
	return tidemark.Invalidf("config", ConfigBranch+"="+ref, "no such branch at %s", src.Location)
}

// ResolveCursor turns a skip target into the commit to move the cursor
// to: it must name a commit, and that commit must be on the source's
// branch (an ancestor of its head), or the next run would fail on it; and
// while the cursor's commit is on the branch, it must descend from the
// cursor, or the skip would move the cursor back.
func (f *Fetcher) ResolveCursor(ctx context.Context, src tidemark.Source, to string) (string, error) {
	ctx = httpx.WithAllowPrivate(ctx, src.AllowPrivate) // the source's own setting, never the process's
	dir, _, err := f.repo(ctx, src)
	if err != nil {
		return "", err
	}
	head, err := f.head(ctx, src, dir)
	if err != nil {
		return "", err
	}
	out, err := f.run(ctx, dir, "", "rev-parse", "--verify", "--quiet", "--end-of-options", to+"^{commit}")
	if err != nil {
		var ge *gitError
		if errors.As(err, &ge) {
			return "", tidemark.Invalidf("to", to, "not a commit of %s", src.Location)
		}
		return "", err
	}
	commit := strings.TrimSpace(string(out))
	ok, err := f.isAncestor(ctx, dir, commit, head)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", tidemark.Invalidf("to", to, "commit %.12s is not on %s (head %.12s)", commit, branch(src), head)
	}
	read := ParseCursor(src.Cursor)
	if len(read) == 0 || src.Cursor == commit {
		return commit, nil
	}
	// A cursor still on the branch moves forward only: from a target that
	// does not descend from each of its commits, the next run would read
	// again commits already ingested. A cursor off the branch (a commit of
	// it gone, or left behind by a rewrite) is what skip exists for: any
	// commit of the branch will do.
	for _, c := range read {
		onBranch, err := f.isAncestor(ctx, dir, c, head)
		if err != nil || !onBranch {
			return commit, err
		}
	}
	for _, c := range read {
		forward, err := f.isAncestor(ctx, dir, c, commit)
		if err != nil {
			return "", err
		}
		if forward {
			continue
		}
		what, args := "name a commit after the cursor, or none (no %s) to skip to the head %.12s", []any{tidemark.Input("to"), head}
		if src.Cursor == head {
			what, args = "the cursor is at the head already, so there is nothing ahead to skip", nil
		}
		cursor := fmt.Sprintf("the cursor %.12s", c)
		if len(read) > 1 {
			cursor = fmt.Sprintf("the cursor's commit %.12s (of %s)", c, read.short())
		}
		return "", tidemark.Invalidf("to", to, "commit %.12s does not descend from %s, which is still on %s: "+
			"the cursor would move back and its commits be read again; "+what, append([]any{commit, cursor, branch(src)}, args...)...)
	}
	return commit, nil
}
