//go:build unix

package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tidemark/tidemark/sqlstore"
)

// A home tidemark makes is its owner's only (0700), and its database too
// (0600, see sqlstore); a home that exists keeps its mode. A database that
// others may read is not changed but warned of, once an open: it holds the
// lanes' secrets.
func TestHomeAndDatabaseAreOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx := context.Background()
	home := filepath.Join(t.TempDir(), "home")
	var warned []string
	cfg := Defaults()
	cfg.Home, cfg.Warn = home, func(msg string) { warned = append(warned, msg) }
	p, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if fi, err := os.Stat(home); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("home: %v %v, want 0700", fi.Mode(), err)
	}
	if len(warned) != 0 {
		t.Errorf("warned of an owner-only database: %q", warned)
	}

	shared := t.TempDir()
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(shared, "tidemark.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.Chmod(filepath.Join(shared, "tidemark.db"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Home = shared
	p, err = Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if fi, _ := os.Stat(shared); fi.Mode().Perm() != 0o755 {
		t.Errorf("an existing home's mode was changed to %v", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Join(shared, "tidemark.db")); fi.Mode().Perm() != 0o644 {
		t.Errorf("an existing database's mode was changed to %v", fi.Mode())
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "tidemark.db") || !strings.Contains(warned[0], "chmod 600") {
		t.Errorf("warnings %q; want one naming the database and the fix", warned)
	}
}

// The database's -wal and -shm files hold what it holds (a lane's secret
// set a moment ago is in the -wal until a checkpoint): while they exist,
// one that others may read is warned of, by name, though the database
// file itself is its owner's only.
func TestDatabaseSidecarsOthersMayReadAreWarnedOf(t *testing.T) {
	home := t.TempDir()
	base := filepath.Join(home, "tidemark.db")
	for name, mode := range map[string]os.FileMode{base: 0o600, base + "-wal": 0o644, base + "-shm": 0o600} {
		if err := os.WriteFile(name, nil, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, mode); err != nil {
			t.Fatal(err)
		}
	}
	var warned []string
	cfg := Defaults()
	cfg.Home, cfg.Warn = home, func(msg string) { warned = append(warned, msg) }
	(&Pipeline{cfg: cfg}).checkDatabaseMode()
	if len(warned) != 1 || !strings.Contains(warned[0], "tidemark.db-wal") || strings.Contains(warned[0], "tidemark.db-shm") ||
		!strings.Contains(warned[0], "chmod 600") {
		t.Fatalf("warnings %q; want one naming the -wal file (only) and the fix", warned)
	}
	if err := os.Chmod(base+"-wal", 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(base + "-shm"); err != nil {
		t.Fatal(err)
	}
	warned = nil
	(&Pipeline{cfg: cfg}).checkDatabaseMode()
	if len(warned) != 0 {
		t.Fatalf("warned of owner-only files (or one that does not exist): %q", warned)
	}
}
