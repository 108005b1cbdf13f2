package gitgate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A directory that holds a file HEAD and a directory objects and refs (or a
// file commondir that names where they are) is a git directory to git: run
// inside such a directory of the host's work tree, git takes it for a bare
// repository, reads its config (core.pager, core.editor, aliases, ...) and
// runs its hooks. Git's fsck refuses only trees named .git. So a commit
// whose tree has such a directory that the user's trees do not have refuses
// its branch, whichever entry type HEAD, objects, refs and commondir are
// (git follows links to them; an executable file passes its access check).

// gitDirMarkers are the entry names git's is_git_directory looks for
// besides HEAD.
var gitDirMarkers = []string{"objects", "refs", "commondir"}

// isGitDirEntry reports whether a path component is HEAD or a marker, as a
// case-insensitive filesystem would see it.
func isGitDirEntry(c string) bool {
	f := fold(c)
	if strings.EqualFold(f, "HEAD") {
		return true
	}
	for _, m := range gitDirMarkers {
		if strings.EqualFold(f, m) {
			return true
		}
	}
	return false
}

// isGitDirNames reports whether names (folded to lower case) make a
// directory git takes for a repository.
func isGitDirNames(has map[string]bool) bool {
	return has["head"] && (has["commondir"] || has["objects"] && has["refs"])
}

// judgeTrees reads the whole tree of every new commit and of the user's
// commits they start from. It returns r with what the user's trees protect
// (withUserTrees) and the reasons each commit's tree refuses its branches
// for: a repository look-alike, a .git entry, or a symlink that leads
// through other links out of the repository or into a protected path, each
// one that the user's trees do not have and that no parent of the commit
// has (the commit that brings it in is named).
func judgeTrees(ctx context.Context, g gitRunner, commits []commit, r rules, cache treeCache) (rules, map[string][]Reason, error) {
	u, err := readUserTrees(ctx, g, commits, cache)
	if err != nil {
		return r, nil, err
	}
	r = r.withUserTrees(u)
	found := map[string]map[Reason]bool{}
	isNew := map[string]bool{}
	for _, c := range commits {
		isNew[c.id] = true
	}
	disk := map[string]map[string]bool{}
	for _, c := range commits {
		found[c.id] = u.treeReasons(r, u.commits[c.id], disk)
	}
	bad := map[string][]Reason{}
	for _, c := range commits {
		bad[c.id] = u.untrackedReasons(c, disk)
	reasons:
		for reason := range found[c.id] {
			for _, p := range c.parents {
				if isNew[p] && found[p][reason] {
					continue reasons
				}
			}
			reason.Commit = c.id
			bad[c.id] = append(bad[c.id], reason)
		}
		sortReasons(bad[c.id])
	}
	return r, bad, nil
}

// treeReasons returns what in tree f the user's trees do not have and
// refuses a branch. disk caches the entries of work tree directories.
func (u *userTrees) treeReasons(r rules, f *treeFacts, disk map[string]map[string]bool) map[Reason]bool {
	out := map[Reason]bool{}
	for _, d := range f.gitDirs {
		if !u.gitDirs[d.path] {
			out[Reason{Path: joinPath(d.path, d.head), Why: lookAlikeWhy(d.path)}] = true
		}
	}
	for _, d := range f.partial {
		if u.top == "" || u.gitDirs[d.path] {
			continue
		}
		names := u.diskNames(d.path, disk)
		if isGitDirNames(names) {
			continue // already one in the work tree: untrackedReasons
		}
		has := map[string]bool{}
		for _, n := range d.has {
			has[n] = true
		}
		var extra []string
		for n := range names {
			if !has[n] {
				has[n] = true
				extra = append(extra, n)
			}
		}
		if len(extra) > 0 && isGitDirNames(has) {
			out[Reason{Path: d.path, Why: fmt.Sprintf("%s, with what your work tree has there now (%s), is a directory git would take for a repository: git run inside it on the host would read its config and run its hooks",
				dirName(d.path), strings.Join(sorted(extra), ", "))}] = true
		}
	}
	for _, p := range f.dotGit {
		if !u.dotGit[p] {
			out[Reason{Path: p, Why: "a path component names git's own directory (.git) on some filesystem"}] = true
		}
	}
	var look linkLookup
	for _, l := range f.links {
		t, ok := u.targets[l.blob]
		if u.links[l] || !ok || t.tooLong || len(r.symlinkReasons(l.path, t.target)) > 0 {
			continue // the user's own link, or one its change is refused for
		}
		if look == nil {
			look = treeLinks(f.links, u.targets)
		}
		loc, _, ok := resolvePath(look, u.tops, split(l.path))
		if !ok {
			out[Reason{Path: l.path, Why: fmt.Sprintf("symlink to %q leads through other links out of the repository, or round in circles", t.target)}] = true
			continue
		}
		for _, w := range r.pathReasons(strings.Join(loc, "/")) {
			out[Reason{Path: l.path, Why: fmt.Sprintf("symlink to %q leads through other links to %s, into a path fetch protects: %s", t.target, dirName(strings.Join(loc, "/")), w)}] = true
		}
	}
	return out
}

// untrackedReasons refuses c's changes inside a directory that the host's
// work tree alone makes a repository look-alike (untracked, or ignored),
// but in its objects and refs, as withUserTrees does for the trees' own.
func (u *userTrees) untrackedReasons(c commit, disk map[string]map[string]bool) []Reason {
	if u.top == "" {
		return nil
	}
	var out []Reason
	for _, ch := range c.changes {
		comps := split(ch.path)
		for i := range comps {
			dir := strings.Join(comps[:i], "/")
			if u.gitDirs[dir] || !isGitDirNames(u.diskNames(dir, disk)) || isObjectsOrRefs(comps[i]) {
				continue
			}
			out = append(out, Reason{Commit: c.id, Path: ch.path, Why: fmt.Sprintf(
				"inside %s, which your work tree (untracked) makes a directory git takes for a repository: git run inside it reads its config and runs its hooks; only its objects and refs may change", dirName(dir))})
			break
		}
	}
	return out
}

// diskNames caches diskNames.
func (u *userTrees) diskNames(dir string, cache map[string]map[string]bool) map[string]bool {
	names, ok := cache[dir]
	if !ok {
		names = diskNames(u.top, dir)
		cache[dir] = names
	}
	return names
}

// diskNames returns the HEAD and marker entries (folded to lower case) of
// directory dir of the work tree at top, when it is a directory no link
// leads to.
func diskNames(top, dir string) map[string]bool {
	names := map[string]bool{}
	if !isRealDir(top, dir) {
		return names
	}
	entries, err := os.ReadDir(filepath.Join(top, filepath.FromSlash(dir)))
	if err != nil {
		return names
	}
	for _, e := range entries {
		if isGitDirEntry(e.Name()) {
			names[strings.ToLower(fold(e.Name()))] = true
		}
	}
	return names
}

func lookAlikeWhy(dir string) string {
	return fmt.Sprintf("%s is a directory git would take for a repository (HEAD with objects and refs, or a commondir): git run inside it on the host would read its config and run its hooks", dirName(dir))
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// dirName names a directory of the repository, the top as "the top".
func dirName(dir string) string {
	if dir == "" {
		return "the top of the repository"
	}
	return dir
}
