// Package dir is an object store in a local directory that can be served
// as it stands: the object "changes/x.html" is the file ROOT/changes/x.html.
//
// Each object's generation and ETag live in a hidden sidecar beside it
// (".x.html.meta"). Writes are durable and atomic: temp file → fsync →
// close → rename → fsync the directory. Conditional writes decide and
// write under an exclusive flock on one of a fixed set of lock files
// (ROOT/.tidemark-locks/NN, chosen by the key), so two processes sharing
// the directory cannot both win a compare-and-swap. (Where flock does not
// exist, the lock excludes writers of one process only.)
//
// A write's temporary files (".tmp-NN-*") live only while it holds lock
// NN. A write killed before its rename leaves them behind, and the store
// collects them: Open in its root, List in every directory it walks. One
// whose lock it can take is an orphan, whatever its age (its writer let go
// of the lock, or died); one whose lock is held is left, however old (its
// writer may be slow, or stopped). A temporary file whose name does not
// say its lock (".tmp-*", written before names did, perhaps by an older
// process still running) is collected once it is staleTempAge old, and so
// is every temporary file where the lock excludes only one process's
// writers (no flock). A sidecar is never taken for one (see tempName).
//
// A sidecar also records the body file's size and modification time as
// written. A file whose size or time differs from its sidecar's was
// changed behind the store's back (edited in place by hand, restored from
// a backup, copied without its times): Head, List and a compare-and-swap
// read and hash it and report the ETag of the bytes it holds, so a sweep
// comparing ETags republishes it. Only such files are read; every other
// look costs a stat beside the sidecar. (An edit that restores both the
// size and the modification time, as touch -r can, is not seen.) A
// sidecar written before times were kept has none: its file is hashed
// once, and the sidecar given its time when the bytes are the ones it
// describes.
//
// The sidecar is renamed into place before the body. A crash between the
// two leaves a sidecar that claims the new version over the old body: the
// store then over-reports the newer generation (so no older writer can slip
// in) and Get reports the ETag of the bytes actually read, which differs
// from the sidecar's, so a sweeper comparing ETags republishes the page.
package dir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tidemark/tidemark/objstore"
)

const (
	lockDir   = ".tidemark-locks"
	lockFiles = 64
	// staleTempAge is when a temporary file that does not name its lock
	// is no longer a write in flight: a write holds its temporary files
	// for one page's write and fsync, not an hour. Were a stopped writer
	// to resume after it, its rename fails and its Put with it, or leaves
	// the torn state described above, which a sweep repairs.
	staleTempAge = time.Hour
	tempPrefix   = ".tmp-"
)

// Store is a directory object store.
type Store struct {
	root string
	// NoSync skips fsync (for benchmarks of the protocol's other costs;
	// never in production).
	NoSync bool
}

var _ objstore.Store = (*Store)(nil)

// Open returns a store rooted at dir, creating it.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(abs, lockDir), 0o755); err != nil {
		return nil, fmt.Errorf("objstore/dir: %w", err)
	}
	s := &Store{root: abs}
	// The root only: walking a whole wiki at every open would cost what a
	// List costs, and List collects where it walks.
	if entries, err := os.ReadDir(abs); err == nil {
		for _, e := range entries {
			s.collectTemp(filepath.Join(abs, e.Name()), e)
		}
	}
	return s, nil
}

// tempName reports whether name is a temporary file of a write, and
// whether (named) and which lock slot it names. os.CreateTemp ends a name
// with digits only, and every other hidden file the store keeps (a
// sidecar, ".NAME.meta") has a dot after its first character, so a
// sidecar is never taken for a temporary file, whatever its key is called
// (a key "tmp-07-report.html" has the sidecar ".tmp-07-report.html.meta").
func tempName(name string) (slot int, named, ok bool) {
	rest, found := strings.CutPrefix(name, tempPrefix)
	if !found {
		return 0, false, false
	}
	if digits(rest) {
		return 0, false, true // written before names said their lock
	}
	nn, random, found := strings.Cut(rest, "-")
	if !found || len(nn) != 2 || !digits(nn) || !digits(random) {
		return 0, false, false
	}
	slot, _ = strconv.Atoi(nn)
	if slot >= lockFiles {
		return 0, false, false
	}
	return slot, true, true
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// collectTemp removes the file at p, entry d, if it is a temporary file
// no write is in flight with (see the package comment). Collecting is
// housekeeping: a file it cannot take now is left for the next time, and
// a failure to remove one fails nothing.
func (s *Store) collectTemp(p string, d fs.DirEntry) {
	if d.IsDir() {
		return
	}
	slot, named, ok := tempName(d.Name())
	if !ok {
		return
	}
	if !named || !locksAcrossProcesses {
		// Which write it is cannot be asked of a lock (an old name, or
		// a lock that excludes only this process's writers): by age.
		info, err := d.Info()
		if err == nil && time.Since(info.ModTime()) > staleTempAge {
			os.Remove(p)
		}
		return
	}
	unlock, held, err := tryLockFile(s.lockPath(slot))
	if err != nil || !held {
		return // a write under this lock is in flight: its files are its own
	}
	defer unlock()
	// Holding the lock, no write that could own this file is in flight: a
	// writer creates and renames (or removes) its temporary files only
	// while it holds their lock.
	os.Remove(p)
}

// Root is the directory the store writes to.
func (s *Store) Root() string { return s.root }

type meta struct {
	Generation int64  `json:"generation"`
	ETag       string `json:"etag"`
	Size       int64  `json:"size"`
	// ModTime is the body file's modification time as written, in Unix
	// nanoseconds; 0 in a sidecar written before it was kept.
	ModTime int64 `json:"mtime_ns,omitempty"`
}

// describes reports whether the sidecar m describes the body file fi
// without reading it: same size and same modification time as written.
func (m meta) describes(fi fs.FileInfo) bool {
	return m.ModTime != 0 && fi.Size() == m.Size && fi.ModTime().UnixNano() == m.ModTime
}

func etag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

func (s *Store) paths(key string) (body, side string, err error) {
	if err := objstore.CheckKey(key); err != nil {
		return "", "", err
	}
	body = filepath.Join(s.root, filepath.FromSlash(key))
	return body, filepath.Join(filepath.Dir(body), "."+filepath.Base(body)+".meta"), nil
}

// absent reports whether err says a file is not there: it does not exist,
// or a path element above it is a file (a key below another key's body).
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func readMeta(side string) (meta, error) {
	var m meta
	b, err := os.ReadFile(side)
	if absent(err) {
		return m, objstore.ErrNotFound
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("objstore/dir: sidecar %s: %w", side, err)
	}
	return m, nil
}

// Get implements objstore.Store.
func (s *Store) Get(ctx context.Context, key string) (objstore.Object, error) {
	bodyPath, side, err := s.paths(key)
	if err != nil {
		return objstore.Object{}, err
	}
	// The sidecar and the body of one write, whatever another process
	// writes meanwhile.
	unlock, err := s.rlock(key)
	if err != nil {
		return objstore.Object{}, err
	}
	defer unlock()
	m, err := readMeta(side)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	b, err := os.ReadFile(bodyPath)
	if absent(err) {
		return objstore.Object{}, fmt.Errorf("get %s: %w", key, objstore.ErrNotFound)
	}
	if err != nil {
		return objstore.Object{}, err
	}
	// The ETag of the bytes read, not the sidecar's claim: a torn write
	// shows up as a mismatch.
	return objstore.Object{Info: objstore.Info{Key: key, ETag: etag(b), Generation: m.Generation, Size: int64(len(b))}, Body: b}, nil
}

// Head implements objstore.Store.
func (s *Store) Head(ctx context.Context, key string) (objstore.Info, error) {
	bodyPath, side, err := s.paths(key)
	if err != nil {
		return objstore.Info{}, err
	}
	m, err := s.current(key, bodyPath, side, nil, true)
	if err != nil {
		return objstore.Info{}, fmt.Errorf("head %s: %w", key, err)
	}
	return objstore.Info{Key: key, ETag: m.ETag, Generation: m.Generation, Size: m.Size}, nil
}

// current is the object at key as the store holds it: its sidecar, with
// the ETag and size of the bytes the body file holds when the file is not
// the one the sidecar describes (see the package comment). fi is the body
// file's, when the caller has it. A body file that is missing leaves the
// sidecar's claim (a torn write, see the package comment). mayRecord lets
// it give an older sidecar the time of a file that holds the bytes it
// describes, taking key's lock; a caller holding the lock passes false.
func (s *Store) current(key, bodyPath, side string, fi fs.FileInfo, mayRecord bool) (meta, error) {
	m, err := readMeta(side)
	if err != nil {
		return m, err
	}
	if fi == nil {
		fi, err = os.Stat(bodyPath)
		if absent(err) {
			return m, nil
		}
		if err != nil {
			return m, fmt.Errorf("objstore/dir: %w", err)
		}
	}
	if m.describes(fi) {
		return m, nil
	}
	b, err := os.ReadFile(bodyPath)
	if absent(err) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("objstore/dir: %w", err)
	}
	if tag := etag(b); tag != m.ETag {
		m.ETag, m.Size = tag, int64(len(b))
		return m, nil
	}
	if mayRecord {
		// The bytes the sidecar describes, under another time (an older
		// sidecar, a copy, a touch): record it, so the next look need not
		// read the file. Housekeeping: a failure changes no answer.
		s.recordTime(key, bodyPath, side, m, fi)
	}
	return m, nil
}

// recordTime gives the sidecar m of key the time of body file fi, whose
// bytes were found to be the ones m describes, if neither has changed
// since: under key's lock, the sidecar still reads m and the file still
// has fi's size and time.
func (s *Store) recordTime(key, bodyPath, side string, m meta, fi fs.FileInfo) {
	unlock, err := s.lock(key)
	if err != nil {
		return
	}
	defer unlock()
	if now, err := readMeta(side); err != nil || now != m {
		return
	}
	if now, err := os.Stat(bodyPath); err != nil || now.Size() != fi.Size() || !now.ModTime().Equal(fi.ModTime()) {
		return
	}
	m.ModTime = fi.ModTime().UnixNano()
	mb, _ := json.Marshal(m)
	dir := filepath.Dir(side)
	tmp, err := s.writeTemp(dir, slotOf(key), mb)
	if err != nil {
		return
	}
	if err := os.Rename(tmp, side); err != nil {
		os.Remove(tmp)
		return
	}
	_ = s.syncDir(dir)
}

// slotOf is the lock file that guards key's compare-and-swap.
func slotOf(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % lockFiles)
}

func (s *Store) lockPath(slot int) string {
	return filepath.Join(s.root, lockDir, fmt.Sprintf("%02d", slot))
}

// lock takes the exclusive lock that guards key's compare-and-swap.
func (s *Store) lock(key string) (unlock func(), err error) {
	return s.lockWith(key, lockFile)
}

// rlock takes key's lock shared, for a read of its sidecar and body: a
// write renames the one and then the other, and a read between the two
// renames would pair one write's generation with another's body.
func (s *Store) rlock(key string) (unlock func(), err error) {
	return s.lockWith(key, lockFileShared)
}

func (s *Store) lockWith(key string, take func(string) (func(), error)) (unlock func(), err error) {
	name := s.lockPath(slotOf(key))
	unlock, err = take(name)
	if errors.Is(err, fs.ErrNotExist) {
		// The store's directory was deleted under us (an operator emptied
		// the wiki): make the lock files' folder again, as Open does.
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return nil, fmt.Errorf("objstore/dir: %w", err)
		}
		unlock, err = take(name)
	}
	return unlock, err
}

// Put implements objstore.Store.
func (s *Store) Put(ctx context.Context, key string, body []byte, opt objstore.PutOptions) (objstore.Info, error) {
	bodyPath, side, err := s.paths(key)
	if err != nil {
		return objstore.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return objstore.Info{}, err
	}
	dir := filepath.Dir(bodyPath)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return objstore.Info{}, fmt.Errorf("objstore/dir: %w", err)
		}
		// A new directory's entry must be durable too.
		if err := s.syncDir(filepath.Dir(dir)); err != nil {
			return objstore.Info{}, err
		}
	}
	unlock, err := s.lock(key)
	if err != nil {
		return objstore.Info{}, err
	}
	defer unlock()
	cur, err := s.current(key, bodyPath, side, nil, false)
	exists := err == nil
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		return objstore.Info{}, err
	}
	if opt.Cond.IfNoneMatch && exists || opt.Cond.IfMatch != "" && (!exists || cur.ETag != opt.Cond.IfMatch) {
		return objstore.Info{}, fmt.Errorf("put %s: %w", key, objstore.ErrPrecondition)
	}
	slot := slotOf(key)
	tmpBody, err := s.writeTemp(dir, slot, body)
	if err != nil {
		return objstore.Info{}, err
	}
	// The body's time as written: a rename keeps it.
	fi, err := os.Stat(tmpBody)
	if err != nil {
		os.Remove(tmpBody)
		return objstore.Info{}, fmt.Errorf("objstore/dir: %w", err)
	}
	m := meta{Generation: opt.Generation, ETag: etag(body), Size: int64(len(body)), ModTime: fi.ModTime().UnixNano()}
	mb, _ := json.Marshal(m)
	tmpMeta, err := s.writeTemp(dir, slot, mb)
	if err != nil {
		os.Remove(tmpBody)
		return objstore.Info{}, err
	}
	if err := os.Rename(tmpMeta, side); err != nil {
		os.Remove(tmpMeta)
		os.Remove(tmpBody)
		return objstore.Info{}, fmt.Errorf("objstore/dir: %w", err)
	}
	if err := os.Rename(tmpBody, bodyPath); err != nil {
		os.Remove(tmpBody)
		return objstore.Info{}, fmt.Errorf("objstore/dir: %w", err)
	}
	if err := s.syncDir(dir); err != nil {
		return objstore.Info{}, err
	}
	return objstore.Info{Key: key, ETag: m.ETag, Generation: m.Generation, Size: m.Size}, nil
}

// writeTemp writes b to a new temporary file in dir, named for lock slot,
// which the caller holds until the file is renamed or removed.
func (s *Store) writeTemp(dir string, slot int, b []byte) (string, error) {
	f, err := os.CreateTemp(dir, fmt.Sprintf("%s%02d-*", tempPrefix, slot))
	if err != nil {
		return "", fmt.Errorf("objstore/dir: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		// Servable as it stands: readable by a web server's user.
		err = f.Chmod(0o644)
	}
	if err == nil && !s.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("objstore/dir: write %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

func (s *Store) syncDir(dir string) error {
	if s.NoSync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("objstore/dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("objstore/dir: fsync %s: %w", dir, err)
	}
	return nil
}

// Delete implements objstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	bodyPath, side, err := s.paths(key)
	if err != nil {
		return err
	}
	unlock, err := s.lock(key)
	if err != nil {
		return err
	}
	defer unlock()
	// Body first, sidecar last: a crash in between leaves a sidecar whose
	// body is missing, which Get reports as not found.
	if err := os.Remove(bodyPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objstore/dir: %w", err)
	}
	if err := os.Remove(side); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objstore/dir: %w", err)
	}
	return s.syncDir(filepath.Dir(bodyPath))
}

// List implements objstore.Store. It reads each object's sidecar and
// stats its body file, and reads the body only of a file its sidecar does
// not describe (see the package comment).
func (s *Store) List(ctx context.Context, prefix string, fn func(objstore.Info) error) error {
	// Walk the deepest directory the prefix names completely.
	base := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		base = prefix[:i]
	}
	start := filepath.Join(s.root, filepath.FromSlash(base))
	var infos []objstore.Info
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == start {
				return filepath.SkipDir
			}
			return err
		}
		name := d.Name()
		if strings.HasPrefix(name, ".") {
			// Hidden: a sidecar, the locks, or a temporary file, which
			// is never an object, and which a dead write left behind.
			if d.IsDir() && p != start {
				return filepath.SkipDir
			}
			s.collectTemp(p, d)
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if absent(err) {
			return nil // deleted since the directory was read
		}
		if err != nil {
			return err
		}
		m, err := s.current(key, p, filepath.Join(filepath.Dir(p), "."+name+".meta"), fi, true)
		if errors.Is(err, objstore.ErrNotFound) {
			return nil // a body without a sidecar was never fully written
		}
		if err != nil {
			return err
		}
		infos = append(infos, objstore.Info{Key: key, ETag: m.ETag, Generation: m.Generation, Size: m.Size})
		return ctx.Err()
	})
	if err != nil {
		return fmt.Errorf("objstore/dir: list %s: %w", prefix, err)
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	for _, in := range infos {
		if err := fn(in); err != nil {
			return err
		}
	}
	return nil
}
