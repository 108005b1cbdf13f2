//go:build unix

package direct

import (
	"fmt"
	"os"
	"path"
	"slices"

	"golang.org/x/sys/unix"
)

// treeEntry is one entry of a tree walkTree walks: everything it holds is
// reached relative to an open directory, so no path is ever longer than a
// name, however deep the tree.
type treeEntry struct {
	rel   string // slash-separated, relative to the top
	name  string
	id    fileID
	mode  uint32 // its lstat mode
	dirfd int    // the directory that holds it
	fd    int    // a directory's own, open; -1 for any other entry
}

func (e *treeEntry) isDir() bool  { return e.mode&unix.S_IFMT == unix.S_IFDIR }
func (e *treeEntry) isLink() bool { return e.mode&unix.S_IFMT == unix.S_IFLNK }

// has reports whether the directory e holds an entry name, of any type.
func (e *treeEntry) has(name string) bool {
	var st unix.Stat_t
	return e.fd >= 0 && unix.Fstatat(e.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// renameIn renames the entry from of directory fd to to.
func renameIn(fd int, from, to string) error {
	return unix.Renameat(fd, from, fd, to)
}

// readLink is the target of the link e.
func (e *treeEntry) readLink() (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(e.dirfd, e.name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// remove removes the entry e (not a directory).
func (e *treeEntry) remove() error {
	return unix.Unlinkat(e.dirfd, e.name, 0)
}

// walkTree calls visit for every entry below top, in name order, without
// following links, and descends into a directory when visit says so. It
// holds one open directory per level (fds, not paths: depth is bounded by
// the open-file limit, not by PATH_MAX).
func walkTree(top string, visit func(e *treeEntry) (descend bool, err error)) error {
	fd, err := unix.Open(top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return walkDir(fd, "", visit)
}

func walkDir(fd int, rel string, visit func(e *treeEntry) (bool, error)) error {
	names, err := readNames(fd)
	if err != nil {
		return fmt.Errorf("reading %s: %w", cmpRel(rel), err)
	}
	for _, name := range names {
		e := treeEntry{rel: path.Join(rel, name), name: name, dirfd: fd, fd: -1}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("%s: %w", e.rel, err)
		}
		e.id, e.mode = fileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, uint32(st.Mode)
		if e.isDir() {
			if e.fd, err = unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
				return fmt.Errorf("%s: %w", e.rel, err)
			}
		}
		descend, err := visit(&e)
		if err == nil && descend && e.isDir() {
			err = walkDir(e.fd, e.rel, visit)
		}
		if e.fd >= 0 {
			unix.Close(e.fd)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readNames lists the directory fd, sorted.
func readNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

func cmpRel(rel string) string {
	if rel == "" {
		return "the top"
	}
	return rel
}
