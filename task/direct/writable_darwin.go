package direct

// accessACL: macOS's ACLs are not POSIX ones; mappedOwnership holds there.
func accessACL(string) ([]aclEntry, error) { return nil, nil }

// mappedOwnership: on macOS, Docker runs in a virtual machine that shares
// the Mac's files with mapped ownership (Docker Desktop, Colima, OrbStack).
func mappedOwnership(string) (bool, string) {
	return true, "macOS, shared with Docker's virtual machine"
}
