//go:build !unix

package dir

import "sync"

// Without flock the lock only excludes writers within this process: on
// these systems a directory store must not be shared by two processes.
var (
	locksMu sync.Mutex
	locks   = map[string]*sync.Mutex{}
)

func lockFile(name string) (unlock func(), err error) {
	locksMu.Lock()
	m, ok := locks[name]
	if !ok {
		m = &sync.Mutex{}
		locks[name] = m
	}
	locksMu.Unlock()
	m.Lock()
	return m.Unlock, nil
}
