//go:build unix

package sandbox

import (
	"io/fs"
	"syscall"
)

// OwnerUID returns the uid that owns a file.
func OwnerUID(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
