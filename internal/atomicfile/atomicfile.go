// Package atomicfile owns how agentbox replaces files on disk: atomically
// (a reader sees the old or the new content, never a mix), durably (data and
// directory entry are fsynced), only when something changed, and for a set
// of files all together or not at all (Tx).
package atomicfile

import (
	"bytes"
	"io/fs"
	"os"
)

// WriteFile writes data to path atomically: it is a transaction (Tx) of
// one file. It writes a temporary file in the same directory, fsyncs it,
// sets its mode to perm (exactly, whatever the umask), renames it over path
// and fsyncs the directory. Missing parent directories are created with
// mode 0755 (before the umask).
//
// When path is already a regular file holding exactly data with exactly
// perm, WriteFile does nothing (the file is not touched, so its mtime stays)
// and reports changed=false. A symbolic link at path is replaced by a
// regular file, not followed.
//
// perm may hold only permission bits (fs.ModePerm). On error path and its
// directories are as they were, with no temporary file left, unless the
// error says that undoing the write failed too.
func WriteFile(path string, data []byte, perm fs.FileMode) (changed bool, err error) {
	var tx Tx
	tx.WriteFile(path, data, perm)
	done, err := tx.Commit()
	return len(done) > 0, err
}

// sameContent reports whether the regular file at path, whose Lstat is fi,
// holds these bytes with this perm.
func sameContent(path string, fi fs.FileInfo, data []byte, perm fs.FileMode) (bool, error) {
	if fi.Mode().Perm() != perm || fi.Size() != int64(len(data)) {
		return false, nil
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	return bytes.Equal(old, data), nil
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
