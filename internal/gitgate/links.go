package gitgate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A host tool opens the path it knows (.vscode/tasks.json, core.hooksPath)
// and the kernel follows the symlinks on its way. So what is protected is
// where that walk ends in the user's trees and work tree, and every path
// the walk passes: a file or link put there moves where it ends.

// linkLookup answers whether a path of a tree (components joined by "/") is
// a symlink and, if so, its target ("" when it cannot be read).
type linkLookup func(path string) (target string, isLink bool)

// maxHops is the number of symlinks a walk follows, as Linux's ELOOP.
const maxHops = 40

// resolvePath walks path through lookup's links as the kernel would: a
// relative target from the link's directory, ".." from where the walk is.
// It returns where the walk ends, every path it passed on the way, and
// ok=false when it leaves the repository, meets an unreadable link or loops.
// tops are the absolute spellings of the top of the work tree: an absolute
// target below one of them stays inside.
func resolvePath(lookup linkLookup, tops []string, path []string) (loc, passed []string, ok bool) {
	todo := slices.Clone(path)
	var cur []string
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return nil, passed, false
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := append(slices.Clone(cur), c)
		key := strings.Join(next, "/")
		passed = append(passed, key)
		target, isLink := lookup(key)
		if !isLink {
			cur = next
			continue
		}
		if hops++; hops > maxHops || target == "" {
			return nil, passed, false
		}
		comps, abs, inside := targetComps(target, tops)
		if !inside {
			return nil, passed, false
		}
		if abs {
			cur = nil
		}
		todo = append(comps, todo...)
	}
	return cur, passed, true
}

// targetComps splits a link target. An absolute target is inside when it
// lies at or below one of tops; its components are then relative to the top.
func targetComps(target string, tops []string) (comps []string, abs, inside bool) {
	switch {
	case target[0] == '/':
		for _, top := range tops {
			if rel, err := filepath.Rel(top, filepath.Clean(target)); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return split(filepath.ToSlash(rel)), true, true
			}
		}
		return nil, true, false
	case target[0] == '\\' || (len(target) > 1 && target[1] == ':'):
		return nil, true, false
	}
	return split(target), false, true
}

// treeLinks looks links up in a tree's symlinks (path -> blob), exactly or
// else as a case-insensitive filesystem would.
func treeLinks(links []linkFact, targets map[string]linkTarget) linkLookup {
	exact := map[string]string{}
	folded := map[string]string{}
	for _, l := range links {
		t := targets[l.blob].target // "" when unread: the walk stops there
		exact[l.path] = t
		if k := foldKey(split(l.path)); folded[k] == "" {
			folded[k] = t
		}
	}
	return func(p string) (string, bool) {
		if t, ok := exact[p]; ok {
			return t, true
		}
		t, ok := folded[foldKey(split(p))]
		return t, ok
	}
}

// diskLinks looks links up in the work tree at top.
func diskLinks(top string) linkLookup {
	return func(p string) (string, bool) {
		full := filepath.Join(top, filepath.FromSlash(p))
		fi, err := os.Lstat(full)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return "", false
		}
		t, err := os.Readlink(full)
		if err != nil {
			return "", true
		}
		return t, true
	}
}

// noLinks is a tree without links: the walk is the path as spelled.
func noLinks(string) (string, bool) { return "", false }

// foldKey is a path as a case-insensitive filesystem would see it.
func foldKey(comps []string) string {
	k := make([]string, len(comps))
	for i, c := range comps {
		k[i] = strings.ToLower(fold(c))
	}
	return strings.Join(k, "/")
}
