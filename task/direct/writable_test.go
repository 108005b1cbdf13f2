//go:build linux

package direct

import (
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirectDecidesByWriting: --workspace direct takes a project that the
// agent's uid can write, whoever owns it (a Mac user's uid is 501), and
// refuses one that it cannot write, even its own.
func TestDirectDecidesByWriting(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root on Linux (chown)")
	}
	const agent, mac = 1000, 501
	for _, tc := range []struct {
		name     string
		uid, gid int
		mode     os.FileMode
		acl      []aclEntry
		want     string // "" when it is taken
	}{
		{"another owner, writable by all", mac, mac, 0o777, nil, ""},
		{"another owner, writable by the agent's group", mac, agent, 0o775, nil, ""},
		{"another owner, an ACL for the agent", mac, mac, 0o755, []aclEntry{
			{tag: aclUserObj, perm: 7}, {tag: aclUser, perm: 7, id: agent}, {tag: aclGroupObj, perm: 5},
			{tag: aclMask, perm: 7}, {tag: aclOther, perm: 5}}, ""},
		{"another owner, an ACL whose mask takes the write bit", mac, mac, 0o755, []aclEntry{
			{tag: aclUserObj, perm: 7}, {tag: aclUser, perm: 7, id: agent}, {tag: aclGroupObj, perm: 5},
			{tag: aclMask, perm: 5}, {tag: aclOther, perm: 7}}, "does not let the agent (uid 1000, group 1000) create files"},
		{"another owner, read-only for others", mac, mac, 0o755, nil, "owner uid 501, group 501, mode 0755"},
		{"the agent's own, read-only", agent, agent, 0o555, nil, "does not let the agent (uid 1000, group 1000) create files"},
		{"the agent's own, writable", agent, agent, 0o755, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, cfg := directProject(t)
			cfg.UID, cfg.GID = agent, agent
			if err := os.Chown(dir, tc.uid, tc.gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			if tc.acl != nil {
				setACL(t, dir, tc.acl)
			}
			_, err := NewPlan(cfg, dir, t.TempDir())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// setACL sets dir's access ACL, as setfacl would; it skips when the file
// system keeps none.
func setACL(t *testing.T, dir string, acl []aclEntry) {
	t.Helper()
	buf := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range acl {
		buf = binary.LittleEndian.AppendUint16(buf, e.tag)
		buf = binary.LittleEndian.AppendUint16(buf, e.perm)
		id := e.id
		if e.tag != aclUser && e.tag != aclGroup {
			id = 0xffffffff
		}
		buf = binary.LittleEndian.AppendUint32(buf, id)
	}
	if err := unix.Setxattr(dir, "system.posix_acl_access", buf, 0); err != nil {
		t.Skipf("the file system keeps no ACL: %v", err)
	}
	if got, err := accessACL(dir); err != nil || len(got) != len(acl) {
		t.Fatalf("the ACL read back is %v (%v)", got, err)
	}
}
