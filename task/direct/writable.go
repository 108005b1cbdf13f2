package direct

import (
	"fmt"
	"io/fs"
)

// POSIX.1e access ACL entry tags (acl/libacl.h), as Linux stores them in the
// system.posix_acl_access attribute.
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
)

// aclEntry is one entry of an access ACL: a tag, an id for aclUser and
// aclGroup, and rwx bits.
type aclEntry struct {
	tag  uint16
	perm uint16
	id   uint32
}

// owner is what decides access to a file: its owner, group, mode and access
// ACL (nil without one).
type owner struct {
	uid, gid int
	mode     fs.FileMode
	acl      []aclEntry
}

// allows reports whether uid, whose only group is gid (the agent's, in its
// container), has every bit of want (rwx, 4 2 1) on the file, by the POSIX
// ACL access check: owner, named user, groups, others.
func (o owner) allows(uid, gid int, want uint16) bool {
	perm := uint16(o.mode.Perm())
	if uid == o.uid {
		return (perm>>6)&want == want
	}
	if o.acl == nil {
		if gid == o.gid {
			return (perm>>3)&want == want
		}
		return perm&want == want
	}
	mask := uint16(7)
	for _, e := range o.acl {
		if e.tag == aclMask {
			mask = e.perm
		}
	}
	for _, e := range o.acl {
		if e.tag == aclUser && int(e.id) == uid {
			return e.perm&mask&want == want
		}
	}
	matched := false
	for _, e := range o.acl {
		if (e.tag == aclGroupObj && gid == o.gid) || (e.tag == aclGroup && int(e.id) == gid) {
			matched = true
			if e.perm&mask&want == want {
				return true
			}
		}
	}
	if matched {
		return false
	}
	for _, e := range o.acl {
		if e.tag == aclOther {
			return e.perm&want == want
		}
	}
	return perm&want == want
}

// agentCanWrite tells why the agent (uid, gid) could not create, rename and
// remove files in the project directory dir, or returns nil when it can:
// that is what --workspace direct needs of it (editing a file needs that
// file's write bit too, which the agent meets file by file). Where the
// file system maps ownership (macOS's virtual machines, FUSE and 9p shares:
// a container sees files as owned by whoever reads them, and writes reach
// the host as the user who runs Docker), the user running agentbox must be
// able to write it; elsewhere the agent's own uid and gid decide, by the
// directory's owner, group, mode and access ACL.
func agentCanWrite(dir string, uid, gid int) error {
	if mapped, fsName := mappedOwnership(dir); mapped {
		if err := accessWX(dir); err != nil {
			return fmt.Errorf("the project directory is on %s, where the sandbox writes as you, and you cannot write it: %w", fsName, err)
		}
		return nil
	}
	o, ok, err := ownerOf(dir)
	if err != nil || !ok {
		return err // unknown here: Docker will say
	}
	if !o.allows(uid, gid, 3) {
		return fmt.Errorf("the project directory (owner uid %d, group %d, mode %04o%s) does not let the agent (uid %d, group %d) create files in it; make it writable for that uid or group (chmod, chgrp, an ACL), or set uid: in agentbox.yaml to one that can write it",
			o.uid, o.gid, o.mode.Perm(), aclNote(o.acl), uid, gid)
	}
	return nil
}

func aclNote(acl []aclEntry) string {
	if acl == nil {
		return ""
	}
	return ", with an ACL"
}
