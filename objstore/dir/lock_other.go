//go:build !unix

package dir

import "sync"

// Without flock the lock only excludes writers within this process: on
// these systems a directory store must not be shared by two processes.
var (
	// locksAcrossProcesses: the lock says nothing of another process's
	// writers, so temporary files are collected by age alone.
	locksAcrossProcesses = false

	locksMu sync.Mutex
	locks   = map[string]*sync.Mutex{}
)

func lockFile(name string) (unlock func(), err error) {
	m := lockOf(name)
	m.Lock()
	return m.Unlock, nil
}

// lockFileShared is lockFile: readers of this process exclude each other
// too, which costs little and keeps them from a write half done.
func lockFileShared(name string) (unlock func(), err error) { return lockFile(name) }

// tryLockFile takes the lock on name if no one holds it; held is false
// when someone does.
func tryLockFile(name string) (unlock func(), held bool, err error) {
	m := lockOf(name)
	if !m.TryLock() {
		return nil, false, nil
	}
	return m.Unlock, true, nil
}

func lockOf(name string) *sync.Mutex {
	locksMu.Lock()
	defer locksMu.Unlock()
	m, ok := locks[name]
	if !ok {
		m = &sync.Mutex{}
		locks[name] = m
	}
	return m
}
