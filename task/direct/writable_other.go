//go:build unix && !linux && !darwin

package direct

// accessACL is not read here.
func accessACL(string) ([]aclEntry, error) { return nil, nil }

// mappedOwnership is unknown here.
func mappedOwnership(string) (bool, string) { return false, "" }
