package gitgate

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// userTrees is what the host already has that a checkout of a new commit
// meets: the trees of its HEAD and of the parents of new commits that are
// its own, and its work tree.
type userTrees struct {
	top     string   // the work tree's top; "" for a bare repository
	config  []place  // what the host's git configuration reads or runs in the work tree
	tops    []string // top as spelled and with its links resolved
	trees   []*treeFacts
	commits map[string]*treeFacts // each new commit's tree
	targets map[string]linkTarget // symlink and commondir blobs
	gitDirs map[string]bool       // repository look-alikes the trees have
	dotGit  map[string]bool
	links   map[linkFact]bool
}

// readUserTrees reads every tree of the new commits and of the user's
// commits they start from, and the targets of their links.
func readUserTrees(ctx context.Context, g gitRunner, commits []commit, cache treeCache) (*userTrees, error) {
	u := &userTrees{commits: map[string]*treeFacts{}, gitDirs: map[string]bool{}, dotGit: map[string]bool{}, links: map[linkFact]bool{}}
	u.readWorkTree(ctx, g)
	if err := u.readTrees(ctx, g, commits, cache); err != nil {
		return nil, err
	}
	var err error
	if u.targets, err = readTargets(ctx, g, u.gather()); err != nil {
		return nil, err
	}
	return u, nil
}

// readWorkTree reads where the work tree is, as spelled and with its links
// resolved, and what the host's git configuration reads or runs in it;
// nothing for a bare repository.
func (u *userTrees) readWorkTree(ctx context.Context, g gitRunner) {
	out, err := g.run(ctx, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return
	}
	u.top = strings.TrimSuffix(string(out), "\n")
	u.tops = []string{u.top}
	if real, err := filepath.EvalSymlinks(u.top); err == nil && real != u.top {
		u.tops = append(u.tops, real)
	}
	u.config = configPlaces(ctx, g, u.top)
}

// readTrees reads the facts of the user's trees (userTreeIDs) and of each
// new commit's tree.
func (u *userTrees) readTrees(ctx context.Context, g gitRunner, commits []commit, cache treeCache) error {
	baseTrees, err := userTreeIDs(ctx, g, commits)
	if err != nil {
		return err
	}
	tr := newTreeReader(ctx, g, cache)
	for _, id := range baseTrees {
		f, err := tr.facts(raw(id))
		if err != nil {
			tr.abort()
			return err
		}
		u.trees = append(u.trees, f)
	}
	for _, c := range commits {
		f, err := tr.facts(raw(c.tree))
		if err != nil {
			tr.abort()
			return err
		}
		u.commits[c.id] = f
	}
	if err := tr.close(); err != nil {
		return fmt.Errorf("reading trees: %s", stderrLine(err))
	}
	return nil
}

// gather collects the repository look-alikes, .git entries and links of
// the user's trees, and returns the blobs to read: the commondir files of
// the look-alikes and the targets of every link, the new commits' too.
func (u *userTrees) gather() []string {
	var blobs []string
	seen := map[string]bool{}
	addBlob := func(b string) {
		if b != "" && !seen[b] {
			seen[b] = true
			blobs = append(blobs, b)
		}
	}
	for _, f := range u.trees {
		for _, d := range f.gitDirs {
			u.gitDirs[d.path] = true
			addBlob(d.commondir)
		}
		for _, p := range f.dotGit {
			u.dotGit[p] = true
		}
		for _, l := range f.links {
			u.links[l] = true
			addBlob(l.blob)
		}
	}
	for _, f := range u.commits {
		for _, l := range f.links {
			addBlob(l.blob)
		}
	}
	return blobs
}

// userTreeIDs returns the trees of the host's HEAD and of the parents of
// new commits that are not new.
func userTreeIDs(ctx context.Context, g gitRunner, commits []commit) ([]string, error) {
	isNew := map[string]bool{}
	for _, c := range commits {
		isNew[c.id] = true
	}
	var revs []string
	if out, err := g.run(ctx, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err == nil {
		revs = append(revs, strings.TrimSpace(string(out)))
	}
	for _, c := range commits {
		for _, p := range c.parents {
			if !isNew[p] && !slices.Contains(revs, p) {
				revs = append(revs, p)
			}
		}
	}
	if len(revs) == 0 {
		return nil, nil
	}
	args := []string{"rev-parse"}
	for _, r := range revs {
		args = append(args, r+"^{tree}")
	}
	out, err := g.run(ctx, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("reading the trees of your commits: %s", stderrLine(err))
	}
	return strings.Fields(string(out)), nil
}

// lookups are the ways the user's links are read: none (the paths as
// spelled), each user tree's, and the work tree's.
func (u *userTrees) lookups() []linkLookup {
	ls := []linkLookup{noLinks}
	for _, f := range u.trees {
		ls = append(ls, treeLinks(f.links, u.targets))
	}
	if u.top != "" {
		ls = append(ls, diskLinks(u.top))
	}
	return ls
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// sortReasons orders reasons by path and text, so that output does not
// depend on map order.
func sortReasons(rs []Reason) {
	slices.SortFunc(rs, func(a, b Reason) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Why, b.Why)
	})
}
