// Package dir watches the files under a local directory. Each file is an
// item keyed by its slash-separated path relative to the directory; a file
// that is added, changed or removed freezes new evidence (its path, the
// change, its SHA-256 and size, and its text when it is small and UTF-8),
// so each change is an event or a new revision of the file's event.
//
// The cursor is the manifest (path → content hash) of the last settled
// run. The manifest is bounded: a directory with more files than the limit
// is invalid with a clear reason, never half-read. Nothing outside the root
// is ever read: symbolic links are not followed, every file is opened
// relative to the root, and a file is read only if what was opened is the
// regular file its name stands for (a link swapped in between listing and
// open is not followed). The root is stored resolved; a root that is now
// a link, or is reached through one, is invalid and never read. A root
// that cannot be read is never empty.
package dir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/tidemark/tidemark"
	"github.com/tidemark/tidemark/fetch"
	"github.com/tidemark/tidemark/fetch/canon"
)

// Config keys understood in a dir source's config.
const (
	// ConfigInclude lists patterns (comma-separated, see filter); only the
	// files one matches, and the files under a directory one matches, are
	// watched (default: all).
	ConfigInclude = "include"
	// ConfigExclude lists patterns of files and directories to skip.
	ConfigExclude = "exclude"
	// ConfigHidden "true" watches dot-files and dot-directories; "false"
	// (the default) skips them. Nothing else is accepted.
	ConfigHidden = "hidden"
	// ConfigMaxFiles bounds the manifest (default 10000).
	ConfigMaxFiles = "max_files"
)

// DefaultMaxFiles is the default bound on watched files.
const DefaultMaxFiles = 10000

// MaxInlineBytes bounds the text of a file kept in its evidence.
const MaxInlineBytes = 64 << 10

// Fetcher watches directories.
type Fetcher struct {
	// beforeOpen, when set, runs between listing a file or directory and
	// opening it (tests swap it there).
	beforeOpen func(rel string)
	// now is the time a run starts (nil: the system clock); tests move it
	// on so files just written count as old.
	now func() time.Time
}

// Manifest is the dir kind's cursor: content hashes by relative path.
type Manifest struct {
	Files map[string]string `json:"files"`
	// Stat is what each file's status said when it was hashed, for the
	// files whose status can be trusted to change with their content
	// (see stamp): a file whose status says the same is not read again.
	// A manifest without it (an earlier release's, a skip's) has every
	// file read.
	Stat map[string]string `json:"stat,omitempty"`
}

// DecodeManifest reads a cursor; an empty cursor is an empty manifest.
func DecodeManifest(s string) (Manifest, error) {
	m, err := decodeManifest(s)
	if err != nil {
		return m, fmt.Errorf("dir: unreadable cursor: %w", err)
	}
	return m, nil
}

func decodeManifest(s string) (Manifest, error) {
	m := Manifest{Files: map[string]string{}}
	if s == "" {
		return m, nil
	}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return m, err
	}
	if m.Files == nil {
		m.Files = map[string]string{}
	}
	return m, m.check()
}

// cursorShape is what a dir cursor looks like, for refusals.
const cursorShape = "a dir cursor is the manifest `source show` prints, " + `{"files":{"PATH":"SHA256",…}}`

// CheckCursor refuses a cursor the kind could not read (ingest.CursorChecker:
// `source test --cursor`).
func (f *Fetcher) CheckCursor(cursor string) error {
	if _, err := decodeManifest(cursor); err != nil {
		return tidemark.Invalidf("cursor", cursor, "not a dir cursor (%v); %s", err, cursorShape)
	}
	return nil
}

// check refuses a manifest this kind could not have written: every key
// must be a file's key (Key) and every hash a SHA-256 in lower-case hex.
func (m Manifest) check() error {
	for key, sum := range m.Files {
		if err := checkKey(key); err != nil {
			return err
		}
		if !isSHA256(sum) {
			return fmt.Errorf("the hash %q of %q is not a SHA-256 (64 lower-case hex digits)", sum, key)
		}
	}
	for key, st := range m.Stat {
		if _, ok := m.Files[key]; !ok {
			return fmt.Errorf("the status of %q, a file the manifest does not hold", key)
		}
		if !isStamp(st) {
			return fmt.Errorf("the status %q of %q is not five numbers separated by colons", st, key)
		}
	}
	return nil
}

// isStamp reports whether s has a stamp's form: five integers joined by
// colons.
func isStamp(s string) bool {
	parts := strings.Split(s, ":")
	if len(parts) != 5 {
		return false
	}
	for _, p := range parts {
		if _, err := strconv.ParseInt(p, 10, 64); err != nil {
			if _, err := strconv.ParseUint(p, 10, 64); err != nil {
				return false
			}
		}
	}
	return true
}

// checkKey refuses a key that no file under a root has: one that does not
// read back (Name) as a clean slash-separated path relative to the root
// (not empty, not rooted, no empty, "." or ".." element, no NUL byte).
func checkKey(key string) error {
	name, err := Name(key)
	if err != nil {
		return err
	}
	bad := name == "" || strings.HasPrefix(name, "/") || strings.IndexByte(name, 0) >= 0
	for el := range strings.SplitSeq(name, "/") {
		bad = bad || el == "" || el == "." || el == ".."
	}
	if bad {
		return fmt.Errorf("%q is not a clean path relative to the root (like \"notes/a.txt\")", key)
	}
	return nil
}

func isSHA256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ResolveCursor checks a skip target: the kind's cursor, a Manifest, as a
// JSON object (fetch.CheckCursor) whose every key is a file's and every
// hash a SHA-256 (what a run could read back). It is stored as given,
// less the files' status (Manifest.Stat) it may hold: the next run reads
// every file and compares it with the hashes the skip gave.
func (f *Fetcher) ResolveCursor(_ context.Context, _ tidemark.Source, to string) (string, error) {
	var m Manifest
	if err := fetch.CheckCursor("dir", to, &m); err != nil {
		return "", err
	}
	if err := m.check(); err != nil {
		return "", tidemark.Invalidf("to", to, "not a dir cursor (%v); %s", err, cursorShape)
	}
	if m.Stat != nil {
		// The hashes are what a skip says; the next run reads every file
		// to compare with them rather than take a status for them.
		m.Stat = nil
		b, err := json.Marshal(m)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	return to, nil
}

// Fetch implements tidemark.Fetcher.
func (f *Fetcher) Fetch(ctx context.Context, src tidemark.Source, cursor string) (tidemark.FetchResult, error) {
	maxFiles, err := fetch.IntConfig(src.Config, ConfigMaxFiles, DefaultMaxFiles)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	prev, err := DecodeManifest(cursor)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	filter, err := newFilter(src.Config)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	root := src.Location
	r, err := openRoot(root)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	defer r.Close()
	start := time.Now()
	if f.now != nil {
		start = f.now()
	}
	cur := Manifest{Files: map[string]string{}, Stat: map[string]string{}}
	var items []tidemark.Item
	escaped := map[string]string{} // new keys of names that are not UTF-8, to their names
	err = walk(r, ".", func(rel string, d fs.DirEntry) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if d.IsDir() {
			if filter.skipDir(rel) {
				return filepath.SkipDir
			}
			if f.beforeOpen != nil {
				f.beforeOpen(rel)
			}
			return nil
		}
		if !d.Type().IsRegular() || !filter.keep(rel) {
			return nil // symlinks, devices, sockets: not followed, not watched
		}
		if len(cur.Files) >= int(maxFiles) {
			return errTooMany
		}
		key := Key(rel)
		if sum, st, ok := unchanged(r, rel, key, prev); ok {
			cur.Files[key], cur.Stat[key] = sum, st
			return nil // hashed by an earlier run, and not written since
		}
		if f.beforeOpen != nil {
			f.beforeOpen(rel)
		}
		sum, size, text, mtime, st, err := read(r, rel, start)
		if errors.Is(err, errNotAFile) {
			return nil // no longer a regular file of its own: not watched
		}
		if err != nil {
			return &walkError{rel: rel, err: err}
		}
		cur.Files[key] = sum
		if st != "" {
			cur.Stat[key] = st
		}
		old, had := prev.Files[key]
		if !had && key != rel {
			escaped[key] = rel // perhaps under its key of an earlier release: see adoptLegacy
		}
		switch {
		case !had:
			items = append(items, fileItem(root, key, "added", sum, "", size, text, mtime))
		case old != sum:
			items = append(items, fileItem(root, key, "changed", sum, old, size, text, mtime))
		}
		return nil
	})
	var we *walkError
	switch {
	case errors.Is(err, errTooMany):
		return tidemark.FetchResult{}, tidemark.Unusable(fmt.Sprintf("more than %d files under %s; raise config %s or narrow with %s", maxFiles, root, ConfigMaxFiles, ConfigInclude), err)
	case err != nil && ctx.Err() != nil:
		return tidemark.FetchResult{}, ctx.Err()
	case errors.As(err, &we) && we.rel != "." && errors.Is(err, fs.ErrPermission):
		return tidemark.FetchResult{}, tidemark.Unusable(fmt.Sprintf("cannot read %s under %s (permission denied): "+
			"make it readable by the user tidemark runs as, or leave it out with config %s=%s (given to source add)",
			Key(we.rel), root, ConfigExclude, excludePattern(we.rel)), we.err)
	case errors.Is(err, fs.ErrPermission):
		return tidemark.FetchResult{}, fmt.Errorf("dir: reading %s: %w", root, err)
	case err != nil:
		return tidemark.FetchResult{}, tidemark.Unreachable("reading the directory", 0, err)
	}
	adopted := adoptLegacy(prev, cur, escaped)
	items = slices.DeleteFunc(items, func(it tidemark.Item) bool { return adopted[it.Key] != "" })
	oldKeys := map[string]bool{}
	for _, old := range adopted {
		oldKeys[old] = true
	}
	var removed []string
	for key := range prev.Files {
		if _, ok := cur.Files[key]; !ok && !oldKeys[key] {
			removed = append(removed, key)
		}
	}
	sort.Strings(removed)
	for _, key := range removed {
		items = append(items, fileItem(root, key, "removed", "", prev.Files[key], 0, "", time.Time{}))
	}
	// Map keys are sorted: a stable cursor. Every key is UTF-8 (Key), so
	// json.Marshal keeps each exactly.
	b, err := json.Marshal(cur)
	if err != nil {
		return tidemark.FetchResult{}, err
	}
	return tidemark.FetchResult{Items: items, Cursor: string(b)}, nil
}

var errTooMany = errors.New("dir: too many files")

// legacyKey is how a manifest of a release before names that are not
// UTF-8 were escaped (1 December 2026) holds such a name: as JSON wrote
// it, each byte of no UTF-8 character a U+FFFD.
func legacyKey(rel string) string {
	var b strings.Builder
	for len(rel) > 0 {
		r, n := utf8.DecodeRuneInString(rel)
		b.WriteRune(r) // utf8.RuneError for a byte of no character
		rel = rel[n:]
	}
	return b.String()
}

// adoptLegacy finds, for files whose names are not UTF-8 and whose keys
// the previous manifest lacks, the key an earlier release gave them: the
// file is the same file, unchanged, when that key holds the same content,
// no file has that name now, and no other file claimed it first (two
// names can share one such key). It returns the adopted old key of each
// new key, so neither an "added" nor a "removed" is made of a file nobody
// touched. A file that changed meanwhile is not adopted: its old key is
// removed and it is added.
func adoptLegacy(prev, cur Manifest, escaped map[string]string) map[string]string {
	adopted := map[string]string{}
	taken := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(escaped)) {
		old := legacyKey(escaped[key])
		sum, had := prev.Files[old]
		if _, real := cur.Files[old]; !had || real || taken[old] || sum != cur.Files[key] {
			continue
		}
		taken[old], adopted[key] = true, old
	}
	return adopted
}

// walk visits the entries under dir (relative to the root, "." for the
// root itself) depth first in lexical order, as fs.WalkDir does, but
// through r itself: an fs.FS refuses names that are not UTF-8, which a
// directory may hold. fn returning fs.SkipDir for a directory skips it.
func walk(r *os.Root, dir string, fn func(rel string, d fs.DirEntry) error) error {
	f, err := r.Open(dir)
	if err != nil {
		return &walkError{rel: dir, err: err}
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return &walkError{rel: dir, err: err}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, d := range ents {
		rel := d.Name()
		if dir != "." {
			rel = dir + "/" + rel
		}
		err := fn(rel, d)
		if d.IsDir() && errors.Is(err, fs.SkipDir) {
			continue
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			if err := walk(r, rel, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkError is a failure to read the file or directory rel ("." for the
// root itself).
type walkError struct {
	rel string
	err error
}

func (e *walkError) Error() string { return e.err.Error() }
func (e *walkError) Unwrap() error { return e.err }

// excludePattern is an exclude pattern that matches rel alone: its glob
// characters escaped, and "?" for what a pattern cannot hold as it is (a
// comma, which separates patterns; a space at either end, which is
// trimmed; a byte of no UTF-8 character).
func excludePattern(rel string) string {
	var b strings.Builder
	for i := 0; i < len(rel); {
		r, n := utf8.DecodeRuneInString(rel[i:])
		switch {
		case r == utf8.RuneError && n == 1, r == ',', r == ' ' && (i == 0 || i+n == len(rel)):
			b.WriteByte('?')
		case r == '*' || r == '?' || r == '[' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteString(rel[i : i+n])
		}
		i += n
	}
	return b.String()
}

// escapedPrefix begins the key of a file whose name is not UTF-8. No
// name's own key begins with it: a clean relative path never starts
// with "./".
const escapedPrefix = "./"

// Key is the item key of the file at rel (slash-separated, relative to
// the root), which is also its name in the manifest: rel itself when it
// is UTF-8 (every key a manifest has ever held), else "./" and rel with
// each byte that is not part of a UTF-8 character, and each "%", written
// as %XX (upper-case hex). A key is always UTF-8, so it survives JSON,
// the database and every page exactly, and Name turns it back into the
// very bytes of the name.
func Key(rel string) string {
	if utf8.ValidString(rel) {
		return rel
	}
	var b strings.Builder
	b.WriteString(escapedPrefix)
	for i := 0; i < len(rel); {
		r, n := utf8.DecodeRuneInString(rel[i:])
		if (r == utf8.RuneError && n == 1) || rel[i] == '%' {
			fmt.Fprintf(&b, "%%%02X", rel[i])
			i++
			continue
		}
		b.WriteString(rel[i : i+n])
		i += n
	}
	return b.String()
}

// Name is the relative path a key (Key) stands for. A key that Key would
// not have written is an error.
func Name(key string) (string, error) {
	if !strings.HasPrefix(key, escapedPrefix) {
		return key, nil
	}
	esc := key[len(escapedPrefix):]
	var b strings.Builder
	for i := 0; i < len(esc); i++ {
		if esc[i] != '%' {
			b.WriteByte(esc[i])
			continue
		}
		if i+3 > len(esc) {
			return "", fmt.Errorf("%q: %% not followed by two hex digits", key)
		}
		v, err := strconv.ParseUint(esc[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("%q: %% not followed by two hex digits", key)
		}
		b.WriteByte(byte(v))
		i += 2
	}
	name := b.String()
	if Key(name) != key {
		return "", fmt.Errorf("%q: not how a name that is not UTF-8 is escaped (a UTF-8 name is written as it is; only %% and the bytes of no UTF-8 character are escaped, as upper-case %%XX)", key)
	}
	return name, nil
}

// openRoot opens the root, inside which every file is then opened through
// os.Root (which refuses any path that leaves it). The root is stored
// resolved when the source is added, so a root that is now a symbolic
// link, or is reached through one (a directory on its path replaced by a
// link), is not the directory the source was added with: it is invalid,
// never read, never followed. The check is made after the open, on what
// was opened: the name must still stand for that very directory, so a
// link swapped in between the check and the open is caught too.
func openRoot(root string) (*os.Root, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, rootError(root, err)
	}
	opened, err := r.Stat(".")
	if err == nil {
		err = checkRoot(root, opened)
	} else {
		err = rootError(root, err)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// checkRoot refuses a root that is not, by its stored path and with no
// link on the way, the directory that was opened.
func checkRoot(root string, opened fs.FileInfo) error {
	li, err := os.Lstat(root)
	if err != nil {
		return rootError(root, err)
	}
	if li.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(root)
		if target != "" && !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(root), target)
		}
		return tidemark.Unusable(fmt.Sprintf("%s is now a symbolic link (to %s), not the directory the source was added with, "+
			"and nothing is read through a link: replace the link with the directory, or add a source for the directory it points to", root, target), nil)
	}
	if !li.IsDir() {
		return tidemark.Unusable(root+" is not a directory", nil)
	}
	resolved, err := filepath.EvalSymlinks(root)
	if err != nil {
		return rootError(root, err)
	}
	if resolved != filepath.Clean(root) {
		return tidemark.Unusable(fmt.Sprintf("%s is now reached through a symbolic link (the path leads to %s), not the directory the source was added with, "+
			"and nothing is read through a link: restore the directories on its path, or add a source for %s", root, resolved, resolved), nil)
	}
	if !os.SameFile(opened, li) {
		return tidemark.Unusable(root+" was replaced while it was being opened; nothing was read", nil)
	}
	return nil
}

// rootError classifies a root that cannot be opened: missing (an
// unmounted volume, a moved directory, a worker on another machine) is
// this worker's own inability to serve the source, which spends no budget
// and leaves it for workers that see the directory; not a directory is
// invalid; permission denied is our own failure (this process lacks the
// right to read what it was asked to watch). None is ever empty.
func rootError(root string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tidemark.CannotServe("directory "+root+" not found on this worker", err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("dir: cannot read %s: %w", root, err)
	}
	if fi, serr := os.Stat(root); serr == nil && !fi.IsDir() {
		return tidemark.Unusable(root+" is not a directory", err)
	}
	return tidemark.Unreachable("directory "+root+" not available", 0, err)
}

// errNotAFile: the name listed is, by the time it is opened, not a regular
// file of its own (gone, a link, a device).
var errNotAFile = errors.New("dir: not a regular file")

// read hashes a file in one pass and keeps its text when it is small and
// valid UTF-8 without NUL bytes. The file is opened inside the root (no
// path out of it is followed), without blocking (a FIFO swapped in cannot
// hang the run), and is read only if what was opened is a regular file
// that is the very file the name now stands for, not the target of a link
// swapped in after the listing.
func read(r *os.Root, rel string, start time.Time) (sum string, size int64, text string, mtime time.Time, stat string, err error) {
	fh, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if li, lerr := r.Lstat(rel); errors.Is(err, fs.ErrNotExist) || (lerr == nil && !li.Mode().IsRegular()) {
			return "", 0, "", time.Time{}, "", errNotAFile
		}
		return "", 0, "", time.Time{}, "", err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return "", 0, "", time.Time{}, "", err
	}
	li, err := r.Lstat(rel)
	if !st.Mode().IsRegular() || err != nil || !li.Mode().IsRegular() || !os.SameFile(st, li) {
		return "", 0, "", time.Time{}, "", errNotAFile
	}
	// The status taken before the content is read: a write while it is
	// read moves the change time, and the next run reads the file again.
	if s, at, ok := stamp(st); ok && at.Before(start.Add(-statSettles)) {
		stat = s
	}
	h := sha256.New()
	var head bytes.Buffer
	n, err := io.Copy(h, io.TeeReader(fh, &limitedWriter{w: &head, n: MaxInlineBytes + 1}))
	if err != nil {
		return "", 0, "", time.Time{}, "", err
	}
	if b := head.Bytes(); n <= MaxInlineBytes && utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 {
		text = canon.Text(string(b))
	}
	return hex.EncodeToString(h.Sum(nil)), n, text, st.ModTime().UTC(), stat, nil
}

// statSettles is how long before a run began a file's times must be for
// its status to stand for its content at the next run: a write within
// one tick of a coarse clock (a second or two on some file systems), or
// on a file server whose clock runs behind ours, could leave the times as
// they were. A file written more recently is read again by the next run.
const statSettles = time.Minute

// unchanged returns the hash and status the previous manifest holds for
// the file at rel (its key key) when the file's status is still the one
// it was hashed with: then it was not written since, and is not read.
func unchanged(r *os.Root, rel, key string, prev Manifest) (sum, stat string, ok bool) {
	was, had := prev.Stat[key]
	if !had {
		return "", "", false
	}
	li, err := r.Lstat(rel)
	if err != nil || !li.Mode().IsRegular() {
		return "", "", false // read decides: gone, or no file of its own
	}
	if s, _, ok := stamp(li); !ok || s != was {
		return "", "", false
	}
	return prev.Files[key], was, true
}

type limitedWriter struct {
	w io.Writer
	n int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(int64(len(p)), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// Evidence is a file change's frozen evidence; it depends only on its
// arguments.
func Evidence(rel, change, sum, previous string, size int64, text string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "file %s\nchange %s\n", rel, change)
	if sum != "" {
		fmt.Fprintf(&b, "sha256 %s\nsize %s\n", sum, strconv.FormatInt(size, 10))
	}
	if previous != "" {
		fmt.Fprintf(&b, "previous %s\n", previous)
	}
	if text != "" {
		b.WriteString("\n")
		b.WriteString(text)
	}
	return []byte(b.String())
}

// fileItem is the item of a change to the file key (Key) stands for.
func fileItem(root, key, change, sum, previous string, size int64, text string, mtime time.Time) tidemark.Item {
	// An escaped key's %XX are the URL's own escapes of the name's bytes.
	rel := strings.TrimPrefix(key, escapedPrefix)
	return tidemark.Item{
		Key:        key,
		Title:      change + " " + key,
		URL:        "file://" + filepath.ToSlash(filepath.Join(root, filepath.FromSlash(rel))),
		OccurredAt: mtime,
		Evidence:   Evidence(key, change, sum, previous, size, text),
	}
}

// filter is a dir source's include, exclude and hidden settings.
//
// A pattern is a path relative to the root, "/"-separated, each element a
// path.Match pattern or "**" (any number of directories, none included).
// It matches a file or directory by its whole relative path, or, when it
// has no "/", by its base name at any depth. A file is watched unless it
// or a directory above it is hidden (a name starting with ".", unless
// hidden=true) or matched by an exclude; when there are includes, it is
// watched only if an include matches it or a directory above it.
type filter struct {
	include, exclude [][]string // each pattern split into its elements
	hidden           bool
}

// CheckConfig refuses a dir source's include and exclude patterns that are
// malformed or could match nothing, and a hidden that is neither true nor
// false: each an *tidemark.InvalidError naming the key, the value and
// what is accepted. `source add` and `source test` ask it, and so does
// every run (a config that slipped past is a failed run, never one that
// silently watches the wrong files).
func CheckConfig(cfg map[string]string) error {
	_, err := newFilter(cfg)
	return err
}

func newFilter(cfg map[string]string) (filter, error) {
	var f filter
	switch v := cfg[ConfigHidden]; strings.TrimSpace(v) {
	case "", "false":
	case "true":
		f.hidden = true
	default:
		return f, tidemark.Invalidf("config", ConfigHidden+"="+v, "want true or false (true watches dot-files and dot-directories; false, the default, skips them)")
	}
	for _, key := range []string{ConfigInclude, ConfigExclude} {
		for _, p := range canon.SplitList(cfg[key]) {
			els, err := parsePattern(p)
			if err != nil {
				return f, tidemark.Invalidf("config", key+"="+p, "%v", err)
			}
			if key == ConfigInclude && !f.hidden && hiddenOnly(els) {
				return f, tidemark.Invalidf("config", key+"="+p, "matches only hidden files or directories (a name starting with \".\"), "+
					"which are skipped: set %s=true to watch them", ConfigHidden)
			}
			if key == ConfigInclude {
				f.include = append(f.include, els)
			} else {
				f.exclude = append(f.exclude, els)
			}
		}
	}
	return f, nil
}

// parsePattern splits a pattern into its elements, refusing one that is
// malformed or could match no path under a root.
func parsePattern(p string) ([]string, error) {
	els := strings.Split(p, "/")
	for _, el := range els {
		switch {
		case el == "" || el == "." || el == "..":
			return nil, errors.New("a pattern matches paths relative to the root, \"/\"-separated (docs/*.md), " +
				"with no leading /, ./ or ../, no empty element and no trailing /")
		case el == "**":
		case strings.Contains(el, "**"):
			return nil, errors.New("** stands only as a whole path element (a/**/b.md), where it matches any number of directories")
		default:
			if _, err := path.Match(el, ""); err != nil {
				return nil, fmt.Errorf("not a glob pattern: %v (elements take *, ?, [a-z], [^a-z] and \\ to escape, as Go's path.Match)", err)
			}
		}
	}
	return els, nil
}

// hiddenOnly tells a pattern that names a hidden element literally, so
// matches only paths the walk skips unless hidden=true.
func hiddenOnly(els []string) bool {
	for _, el := range els {
		if strings.HasPrefix(el, ".") {
			return true
		}
	}
	return false
}

// matches tells whether the pattern els matches the file or directory rel.
func matches(els []string, rel string) bool {
	if len(els) == 1 && els[0] != "**" {
		if ok, _ := path.Match(els[0], path.Base(rel)); ok {
			return true
		}
	}
	return matchElems(els, strings.Split(rel, "/"))
}

// matchElems matches pattern elements against path elements, "**" taking
// any number of them, in time proportional to their product.
func matchElems(els, names []string) bool {
	// cur[j]: the elements seen so far match names[:j].
	cur := make([]bool, len(names)+1)
	cur[0] = true
	for _, el := range els {
		next := make([]bool, len(names)+1)
		if el == "**" {
			seen := false
			for j := range next {
				seen = seen || cur[j]
				next[j] = seen
			}
		} else {
			for j := 1; j <= len(names); j++ {
				if cur[j-1] {
					next[j], _ = path.Match(el, names[j-1])
				}
			}
		}
		cur = next
	}
	return cur[len(names)]
}

func matchAny(patterns [][]string, rel string) bool {
	for _, els := range patterns {
		if matches(els, rel) {
			return true
		}
	}
	return false
}

func (f filter) skipDir(rel string) bool {
	return (!f.hidden && strings.HasPrefix(path.Base(rel), ".")) || matchAny(f.exclude, rel)
}

// keep tells whether to watch the file rel, whose directories were not
// skipped (skipDir).
func (f filter) keep(rel string) bool {
	if !f.hidden && strings.HasPrefix(path.Base(rel), ".") {
		return false
	}
	if matchAny(f.exclude, rel) {
		return false
	}
	if len(f.include) == 0 || matchAny(f.include, rel) {
		return true
	}
	for i := range len(rel) {
		if rel[i] == '/' && matchAny(f.include, rel[:i]) {
			return true
		}
	}
	return false
}
