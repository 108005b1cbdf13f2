package gitgate

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// place is a path that the user's trees or work tree protect beyond the
// rules' own paths.
type place struct {
	at     []string
	why    string
	exempt [][]string // workspace.writable paths inside it, resolved as it was
	gitDir bool       // a repository look-alike: its objects and refs may change
}

// movedReasons says why a change to comps is refused by a place, leaving
// out what already says.
func (r rules) movedReasons(comps []string, already []string) []string {
	var why []string
	for _, m := range r.moved {
		if !under(comps, m.at) || r.anyUnder(comps, m.exempt) {
			continue
		}
		if m.gitDir && len(comps) > len(m.at) && isObjectsOrRefs(comps[len(m.at)]) {
			continue
		}
		if !slices.Contains(already, m.why) && !slices.Contains(why, m.why) {
			why = append(why, m.why)
		}
	}
	return why
}

func isObjectsOrRefs(c string) bool {
	f := fold(c)
	return strings.EqualFold(f, "objects") || strings.EqualFold(f, "refs")
}

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
// commits they start from.
func readUserTrees(ctx context.Context, g gitRunner, commits []commit) (*userTrees, error) {
	u := &userTrees{commits: map[string]*treeFacts{}, gitDirs: map[string]bool{}, dotGit: map[string]bool{}, links: map[linkFact]bool{}}
	if out, err := g.run(ctx, nil, "rev-parse", "--show-toplevel"); err == nil {
		u.top = strings.TrimSuffix(string(out), "\n")
		u.tops = []string{u.top}
		if real, err := filepath.EvalSymlinks(u.top); err == nil && real != u.top {
			u.tops = append(u.tops, real)
		}
		u.config = configPlaces(ctx, g, u.top)
	}
	baseTrees, err := userTreeIDs(ctx, g, commits)
	if err != nil {
		return nil, err
	}
	tr := newTreeReader(ctx, g)
	for _, id := range baseTrees {
		f, err := tr.facts(id)
		if err != nil {
			tr.abort()
			return nil, err
		}
		u.trees = append(u.trees, f)
	}
	for _, c := range commits {
		f, err := tr.facts(c.tree)
		if err != nil {
			tr.abort()
			return nil, err
		}
		u.commits[c.id] = f
	}
	if err := tr.close(); err != nil {
		return nil, fmt.Errorf("reading trees: %s", stderrLine(err))
	}
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
	if u.targets, err = readTargets(ctx, g, blobs); err != nil {
		return nil, err
	}
	return u, nil
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

// protectedSpelling is one path the rules protect, as spelled.
type protectedSpelling struct {
	path     []string
	name     string
	moved    func(loc string) string // the reason for a change where its links lead
	writable [][]string              // workspace.writable paths at or below it
}

func (r rules) spellings() []protectedSpelling {
	var ps []protectedSpelling
	for _, e := range Protected {
		p := protectedSpelling{path: split(e.Path), name: "protected path " + e.Path,
			moved: func(loc string) string {
				return fmt.Sprintf("protected path %s: %s (your links make it %s)", e.Path, e.Why, loc)
			}}
		for _, w := range r.writable {
			if under(w, p.path) {
				p.writable = append(p.writable, w)
			}
		}
		ps = append(ps, p)
	}
	for _, ro := range r.readOnly {
		name := strings.Join(ro, "/")
		ps = append(ps, protectedSpelling{path: ro, name: "read-only path " + name, moved: func(loc string) string {
			return fmt.Sprintf("read-only path %s (workspace.readonly), which your links make %s", name, loc)
		}})
	}
	for _, h := range r.hooksPaths {
		name := strings.Join(h, "/")
		ps = append(ps, protectedSpelling{path: h, name: "the host's hooks directory " + name, moved: func(loc string) string {
			return fmt.Sprintf("the host's hooks directory %s (core.hooksPath), which your links make %s: git runs these programs", name, loc)
		}})
	}
	return ps
}

// withUserTrees returns r with the places u protects: where the user's
// links lead each protected path, the paths on the way there, and the
// repository look-alikes (and the directories their commondir names) the
// user's trees already have.
func (r rules) withUserTrees(u *userTrees) rules {
	r.moved = append(slices.Clone(r.moved), u.config...)
	r.ways = map[string]string{}
	for _, look := range u.lookups() {
		for _, s := range r.spellings() {
			loc, passed, ok := resolvePath(look, u.tops, s.path)
			for _, p := range passed {
				pc := split(p)
				if under(pc, s.path) || ok && under(pc, loc) {
					continue
				}
				if k := foldKey(pc); r.ways[k] == "" {
					r.ways[k] = fmt.Sprintf("on the way to %s through your links: a file or link here moves what host tools read there", s.name)
				}
			}
			if !ok || under(loc, s.path) && len(loc) == len(s.path) {
				continue
			}
			m := place{at: loc, why: s.moved(strings.Join(loc, "/"))}
			for _, w := range s.writable {
				if wl, _, ok := resolvePath(look, u.tops, w); ok && under(wl, loc) {
					m.exempt = append(m.exempt, wl)
				}
			}
			r.moved = append(r.moved, m)
		}
	}
	look := u.lookups()
	literal := r
	for i, f := range u.trees {
		for _, l := range f.links {
			why := literal.pathReasons(l.path)
			if len(why) == 0 {
				continue
			}
			// A tool that reads a protected path reads where the
			// user's link there leads (.vscode/tasks.json ->
			// ../tools/tasks.json).
			lc := split(l.path)
			loc, passed, ok := resolvePath(look[i+1], u.tops, lc)
			for _, p := range passed {
				if pc := split(p); !under(pc, lc) && !(ok && under(pc, loc)) && len(literal.pathReasons(p)) == 0 {
					if k := foldKey(pc); r.ways[k] == "" {
						r.ways[k] = fmt.Sprintf("on the way to %s through your links: a file or link here moves what host tools read there", l.path)
					}
				}
			}
			if ok && !slices.Equal(loc, lc) {
				m := place{at: loc, why: fmt.Sprintf("%s (your link %s leads here)", why[0], l.path)}
				for _, w := range literal.writable {
					if wl, _, ok := resolvePath(look[i+1], u.tops, w); ok && under(wl, loc) {
						m.exempt = append(m.exempt, wl)
					}
				}
				r.moved = append(r.moved, m)
			}
		}
	}
	for i, f := range u.trees {
		for _, d := range f.gitDirs {
			at := split(d.path)
			r.moved = append(r.moved, place{at: at, gitDir: true, why: fmt.Sprintf(
				"inside %s, which git takes for a repository: git run inside it reads its config and runs its hooks; only its objects and refs may change", dirName(d.path))})
			if d.commondir == "" {
				continue
			}
			c := strings.TrimRight(u.targets[d.commondir].target, "\r\n")
			if c == "" {
				continue
			}
			comps, abs, inside := targetComps(c, u.tops)
			if !inside {
				continue
			}
			if !abs {
				comps = append(slices.Clone(at), comps...)
			}
			if loc, _, ok := resolvePath(look[i+1], u.tops, comps); ok {
				r.moved = append(r.moved, place{at: loc, gitDir: true, why: fmt.Sprintf(
					"inside %s, the common directory (commondir) of %s, which git takes for a repository: git run inside it reads this config and runs these hooks; only objects and refs may change", dirName(strings.Join(loc, "/")), dirName(d.path))})
			}
		}
	}
	return r
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
