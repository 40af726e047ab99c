//go:build unix

package ingest

import (
	"errors"
	"syscall"
)

// processAlive asks the kernel with signal 0, which checks without
// signalling: no such process means gone; anything else (it exists, or it
// belongs to another user) means alive.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return !errors.Is(err, syscall.ESRCH)
}
