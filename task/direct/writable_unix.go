//go:build unix

package direct

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownerOf returns the owner, group, mode and access ACL of path.
func ownerOf(path string) (owner, bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return owner{}, false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return owner{}, false, nil
	}
	acl, err := accessACL(path)
	if err != nil {
		return owner{}, false, err
	}
	return owner{uid: int(st.Uid), gid: int(st.Gid), mode: fi.Mode(), acl: acl}, true, nil
}

// accessWX checks that the user running agentbox may create files in dir.
func accessWX(dir string) error {
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return &fs.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}
