package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// RefuseLinks refuses a symbolic link at any of root/rel (rels are
// slash-separated, relative to root): agentbox writes only inside the
// project, not through a link the project holds. A path that is missing or
// cannot be read is no link.
func RefuseLinks(root string, rels ...string) error {
	for _, rel := range rels {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("refusing to write through %s: it is a symbolic link", p)
		}
	}
	return nil
}
