package bump

import (
	"fmt"
	"strings"
)

// ShortDigest abbreviates a digest to its first 12 hex digits, as docker
// does; anything else is returned as it is.
func ShortDigest(d string) string {
	if hex, ok := strings.CutPrefix(d, "sha256:"); ok && len(hex) > 12 {
		return "sha256:" + hex[:12]
	}
	return d
}

// TreeNote says how much of the CLI's dependency tree changed.
func (c PackageChange) TreeNote() string {
	if c.TreeChanged == 0 {
		return fmt.Sprintf("tree of %d packages unchanged", c.TreeSize)
	}
	return fmt.Sprintf("%d of %d packages of its tree changed", c.TreeChanged, c.TreeSize)
}

// Short are the change's old and new values as a table shows them: a
// package's versions, or the dependency closure's digests abbreviated.
func (c DebianChange) Short() (old, cur string) {
	if c.Package == ClosureRow {
		return ShortDigest(c.Old), ShortDigest(c.New)
	}
	return c.Old, c.New
}
