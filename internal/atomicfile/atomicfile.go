// Package atomicfile owns how agentbox replaces files on disk: atomically
// (a reader sees the old or the new content, never a mix), durably (data and
// directory entry are fsynced), and only when something changed.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile writes data to path atomically: it writes a temporary file in
// the same directory, fsyncs it, sets its mode to perm (exactly, whatever
// the umask), renames it over path and fsyncs the directory. Missing parent
// directories are created with mode 0755 (before the umask).
//
// When path is already a regular file holding exactly data with exactly
// perm, WriteFile does nothing (the file is not touched, so its mtime stays)
// and reports changed=false. A symbolic link at path is replaced by a
// regular file, not followed.
//
// perm may hold only permission bits (fs.ModePerm). On error no temporary
// file is left behind; path is unchanged unless the error comes from the
// final directory fsync, after the rename, in which case changed is true.
func WriteFile(path string, data []byte, perm fs.FileMode) (changed bool, err error) {
	if perm&^fs.ModePerm != 0 {
		return false, fmt.Errorf("writing %s: mode %v has bits other than permissions", path, perm)
	}
	if same, err := unchanged(path, data, perm); err != nil {
		return false, err
	} else if same {
		return false, nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := replace(path, dir, data, perm); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return true, fmt.Errorf("writing %s: syncing directory: %w", path, err)
	}
	return true, nil
}

// unchanged reports whether path is a regular file with these bytes and
// this perm. A missing file (or parent) is simply not unchanged.
func unchanged(path string, data []byte, perm fs.FileMode) (bool, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("writing %s: %w", path, err)
	case !fi.Mode().IsRegular() || fi.Mode().Perm() != perm || fi.Size() != int64(len(data)):
		return false, nil
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	return bytes.Equal(old, data), nil
}

// replace writes data to a temporary file in dir and renames it over path,
// removing the temporary file on any failure.
func replace(path, dir string, data []byte, perm fs.FileMode) (err error) {
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close() // may already be closed; the first error is the one that matters
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
