//go:build unix

package dir

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// locksAcrossProcesses: flock excludes another process's writers too, so
// a lock taken says no write of any process holds it.
const locksAcrossProcesses = true

// lockFile takes an exclusive flock on name. flock locks belong to the
// open file description, so two goroutines of one process exclude each
// other as two processes do.
func lockFile(name string) (unlock func(), err error) {
	return flockFile(name, os.O_RDWR, syscall.LOCK_EX)
}

// lockFileShared takes a shared flock on name: readers hold it together,
// and never while a writer holds the exclusive one.
func lockFileShared(name string) (unlock func(), err error) {
	return flockFile(name, os.O_RDONLY, syscall.LOCK_SH)
}

// flockFile opens name (created if missing) with mode and waits for the
// flock how (LOCK_EX or LOCK_SH) on it.
func flockFile(name string, mode, how int) (unlock func(), err error) {
	f, err := os.OpenFile(name, os.O_CREATE|mode, 0o644)
	if err != nil {
		return nil, fmt.Errorf("objstore/dir: lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("objstore/dir: flock: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// tryLockFile takes the flock on name if no one holds it; held is false
// when someone does.
func tryLockFile(name string) (unlock func(), held bool, err error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("objstore/dir: lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("objstore/dir: flock: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, true, nil
}
