package direct

// What a direct task's collection does to the work tree before any git
// looks at it: every git directory the agent made is disarmed and every
// link it made that leads out of the project is removed. Both are judged by
// identity (device and inode), not by path, so that moving the user's own
// away and putting the agent's in its place changes nothing; the walk
// holds directories open rather than naming paths, so that no depth stops
// it; and when it fails, nothing else runs.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// treeScan is what scanWorkTree finds in the work tree.
type treeScan struct {
	gitDirs []pathID      // git directories and .git files (the top's .git aside)
	masked  []hiddenMatch // paths workspace.hidden masks
	links   []fileID      // symbolic links
}

// scanWorkTree walks the work tree (not into git directories, which it
// lists) and returns its git directories, its links and the paths
// workspace.hidden masks (a masked directory is not walked further).
func scanWorkTree(top string, hidden []string) (*treeScan, error) {
	match := hiddenMatcher(hidden)
	var s treeScan
	err := walkTree(top, func(e *treeEntry) (bool, error) {
		if e.rel == ".git" {
			return false, nil
		}
		if e.isLink() {
			s.links = append(s.links, e.id)
		}
		if isGitDir(e) || e.name == ".git" && !e.isDir() {
			s.gitDirs = append(s.gitDirs, pathID{e.rel, e.id})
			return false, nil
		}
		if !e.isLink() && match(e.rel) {
			s.masked = append(s.masked, hiddenMatch{e.rel, e.isDir()})
			return false, nil
		}
		return e.isDir(), nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the work tree: %w", err)
	}
	return &s, nil
}

// isGitDir reports whether git would take directory e for a git directory:
// HEAD beside objects and refs, or beside commondir (of any type: git
// takes an executable file or a link for a directory).
func isGitDir(e *treeEntry) bool {
	return e.isDir() && e.has("HEAD") && (e.has("commondir") || e.has("objects") && e.has("refs"))
}

// Disarmed is what Disarm did.
type Disarmed struct {
	GitDirs []string // quarantined: their HEAD (or the .git file) renamed
	Links   []string // removed, as "PATH -> TARGET"
}

// Disarm renames the HEAD of every git directory in the work tree that
// is not one of the user's (st.GitDirs, by identity), and every .git file
// or link that is not, so that no git takes them for a repository; it
// walks into each one it disarms, for those nested inside. It removes every
// link the agent made (not in st.Links) that leads out of the work tree.
// An error means the tree is not known to be disarmed.
func Disarm(top string, st *State) (Disarmed, error) {
	var out Disarmed
	users, links := map[fileID]bool{}, map[fileID]bool{}
	for _, g := range st.GitDirs {
		users[g.fileID] = true
	}
	for _, l := range st.Links {
		links[l] = true
	}
	root, err := os.OpenRoot(top)
	if err != nil {
		return out, err
	}
	defer root.Close()
	err = walkTree(top, func(e *treeEntry) (bool, error) {
		switch {
		case e.rel == ".git" || users[e.id] && (e.name == ".git" || isGitDir(e)):
			return false, nil // the user's, mounted read-only during the task
		case e.isLink() && !links[e.id]:
			if target, leaves := linkLeaves(root, e); leaves {
				if err := e.remove(); err != nil {
					return false, fmt.Errorf("removing the link %s the agent made: %w", e.rel, err)
				}
				out.Links = append(out.Links, e.rel+" -> "+target)
				return false, nil
			}
		}
		var err error
		switch {
		case e.name == ".git" && !e.isDir():
			err = renameIn(e.dirfd, e.name, e.name+QuarantineSuffix)
		case isGitDir(e):
			err = renameIn(e.fd, "HEAD", "HEAD"+QuarantineSuffix)
		default:
			return e.isDir(), nil
		}
		if err != nil {
			return false, fmt.Errorf("disarming the git directory %s the agent made: %w", e.rel, err)
		}
		out.GitDirs = append(out.GitDirs, e.rel)
		return e.isDir(), nil
	})
	return out, err
}

// linkLeaves reports whether the link e leads out of root: its target is
// absolute, climbs out of root as written, or resolves (through any link)
// to a path outside root, or cannot be resolved but for a missing entry.
func linkLeaves(root *os.Root, e *treeEntry) (string, bool) {
	target, err := e.readLink()
	if err != nil || filepath.IsAbs(target) {
		return target, true
	}
	if lex := path.Join(path.Dir(e.rel), filepath.ToSlash(target)); lex == ".." || strings.HasPrefix(lex, "../") {
		return target, true
	}
	_, err = root.Stat(e.rel)
	return target, err != nil && !errors.Is(err, fs.ErrNotExist)
}
