package gitgate

import (
	"bytes"
	"context"
	"fmt"
	"strings"
)

// A directory that holds a file HEAD and a directory objects and refs (or a
// file commondir that names where they are) is a git directory to git: run
// inside such a directory of the host's work tree, git takes it for a bare
// repository, reads its config (core.pager, core.editor, aliases, ...) and
// runs its hooks. Git's fsck refuses only trees named .git. So a commit
// whose tree has such a directory refuses its branch.

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

// bareRepoReasons returns, per commit, the directories of its tree that git
// would take for a repository. Only directories that one of the commit's own
// changes passes through with a HEAD or marker entry are read: a directory
// that no change touches was examined in the commit that made it.
func bareRepoReasons(ctx context.Context, g gitRunner, commits []commit) (map[string][]Reason, error) {
	bad := map[string][]Reason{}
	for _, c := range commits {
		seen := map[string]bool{}
		for _, ch := range c.changes {
			if ch.mode == "000000" {
				continue
			}
			comps := split(ch.path)
			for i, comp := range comps {
				dir := strings.Join(comps[:i], "/")
				if !isGitDirEntry(comp) || seen[dir] {
					continue
				}
				seen[dir] = true
				is, err := looksLikeGitDir(ctx, g, c.id, dir)
				if err != nil {
					return nil, err
				}
				if is {
					bad[c.id] = append(bad[c.id], Reason{Commit: c.id, Path: ch.path, Why: fmt.Sprintf(
						"%s is a directory git would take for a repository (HEAD with objects and refs, or a commondir): git run inside it on the host would read its config and run its hooks", dirName(dir))})
				}
			}
		}
	}
	return bad, nil
}

// looksLikeGitDir reports whether directory dir of commit id holds HEAD and
// either objects and refs, or commondir.
func looksLikeGitDir(ctx context.Context, g gitRunner, id, dir string) (bool, error) {
	out, err := g.run(ctx, nil, "ls-tree", "-z", "--name-only", id+":"+dir)
	if err != nil {
		return false, fmt.Errorf("reading directory %s of commit %s: %s", dirName(dir), id, stderrLine(err))
	}
	has := map[string]bool{}
	for _, name := range bytes.Split(out, []byte{0}) {
		has[strings.ToLower(fold(string(name)))] = true
	}
	return has["head"] && (has["commondir"] || has["objects"] && has["refs"]), nil
}

// dirName names a directory of the repository, the top as "the top".
func dirName(dir string) string {
	if dir == "" {
		return "the top of the repository"
	}
	return dir
}
