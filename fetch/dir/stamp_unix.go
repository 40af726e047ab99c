//go:build linux || darwin

package dir

import (
	"fmt"
	"io/fs"
	"syscall"
	"time"
)

// stamp is what fi, a regular file's status, says of it that changes
// whenever its content is written: its size, its modification time, its
// change time (which no one sets back: the kernel moves it on every write,
// and on every change of the modification time), its device and inode (a
// file renamed over it is another); and the later of its two times. ok is
// false where the status does not tell them.
func stamp(fi fs.FileInfo) (s string, at time.Time, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", time.Time{}, false
	}
	ctime := time.Unix(ctim(st).Unix())
	at = fi.ModTime()
	if ctime.After(at) {
		at = ctime
	}
	return fmt.Sprintf("%d:%d:%d:%d:%d", fi.Size(), fi.ModTime().UnixNano(), ctime.UnixNano(), uint64(st.Dev), uint64(st.Ino)), at, true
}
