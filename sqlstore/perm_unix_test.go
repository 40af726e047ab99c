//go:build unix

package sqlstore_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tidemark/tidemark/sqlstore"
)

// A SQLite database tidemark creates holds the lanes' secrets in clear, so
// only its owner may read it: the file, its -wal and -shm are 0600 and a
// directory created for it 0700, whatever the umask lets through. A
// database that exists keeps the mode its owner gave it.
func TestNewSQLiteDatabaseIsOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "home")
	path := filepath.Join(dir, "tidemark.db")
	db, err := sqlstore.Open(context.Background(), "sqlite:"+path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Opening migrated the database: its -wal and -shm exist.
	want := map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600}
	for p, mode := range want {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s: mode %#o, want %#o", filepath.Base(p), got, mode)
		}
	}

	shared := filepath.Join(t.TempDir(), "shared.db")
	if err := os.WriteFile(shared, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	db2, err := sqlstore.Open(context.Background(), "sqlite:"+shared, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db2.Close()
	if fi, err := os.Stat(shared); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("an existing database's mode was changed: %v %v", fi.Mode(), err)
	}
}
