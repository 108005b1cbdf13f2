//go:build !unix

package direct

import "errors"

type treeEntry struct {
	rel, name string
	id        fileID
	dirfd, fd int
}

func (e *treeEntry) isDir() bool               { return false }
func (e *treeEntry) isLink() bool              { return false }
func (e *treeEntry) has(string) bool           { return false }
func (e *treeEntry) readLink() (string, error) { return "", errUnixOnly }
func (e *treeEntry) remove() error             { return errUnixOnly }
func renameIn(int, string, string) error       { return errUnixOnly }

var errUnixOnly = errors.New("--workspace direct needs a Unix host")

func walkTree(string, func(*treeEntry) (bool, error)) error { return errUnixOnly }
