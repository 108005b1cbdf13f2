package direct

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// accessACL reads path's access ACL (system.posix_acl_access: a version 2
// header, then 8-byte entries, little-endian); nil when it has none.
func accessACL(path string) ([]aclEntry, error) {
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(path, "system.posix_acl_access", buf)
	if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.EOPNOTSUPP) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the ACL of %s: %w", path, err)
	}
	buf = buf[:n]
	if len(buf) < 4 || binary.LittleEndian.Uint32(buf) != 2 || (len(buf)-4)%8 != 0 {
		return nil, fmt.Errorf("reading the ACL of %s: unknown format", path)
	}
	var acl []aclEntry
	for b := buf[4:]; len(b) > 0; b = b[8:] {
		acl = append(acl, aclEntry{tag: binary.LittleEndian.Uint16(b), perm: binary.LittleEndian.Uint16(b[2:]), id: binary.LittleEndian.Uint32(b[4:])})
	}
	return acl, nil
}

// mappedOwnership reports whether path is on a file system that shares a
// host's files with mapped ownership: FUSE (virtiofs is FUSE-based) and 9p,
// what Colima, Lima, Podman machine and WSL use to share the host's files.
func mappedOwnership(path string) (bool, string) {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return false, ""
	}
	switch st.Type {
	case unix.FUSE_SUPER_MAGIC:
		return true, "a FUSE or virtiofs share"
	case unix.V9FS_MAGIC:
		return true, "a 9p share"
	}
	return false, ""
}
