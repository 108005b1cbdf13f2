package lockfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Read reads dir/agentbox.lock; nil when there is none. Errors name the
// file as dir/agentbox.lock, so dir should be the path as the user wrote it.
func Read(dir string) (*Lock, error) {
	file := filepath.Join(dir, File)
	data, err := os.ReadFile(filepath.Join(dir, File))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return Parse(file, data)
}
