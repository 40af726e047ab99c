package dir

import "syscall"

func ctim(st *syscall.Stat_t) *syscall.Timespec { return &st.Ctim }
