package generator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentbox-dev/agentbox/images"
)

// readLock reads dir/agentbox.lock; nil when there is none.
func readLock(dir string) (*images.Lock, error) {
	file := filepath.Join(dir, images.LockFile)
	data, err := os.ReadFile(filepath.Join(dir, images.LockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return images.ParseLock(file, data)
}
