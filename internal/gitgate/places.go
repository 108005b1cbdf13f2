package gitgate

import (
	"fmt"
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

// withUserTrees returns r with the places u protects: where the user's
// links lead each protected path and each link of theirs inside one, the
// paths on the way there, what the host's git configuration reads or runs,
// and the repository look-alikes (and the directories their commondir
// names) the user's trees already have.
func (r rules) withUserTrees(u *userTrees) rules {
	literal := r
	r.moved = append(slices.Clone(r.moved), u.config...)
	r.ways = map[string]string{}
	looks := u.lookups()
	for _, look := range looks {
		for _, s := range literal.spellings() {
			r.follow(literal, look, u.tops, s)
		}
	}
	for i, f := range u.trees {
		for _, l := range f.links {
			// A tool that reads a protected path reads where the
			// user's link there leads (.vscode/tasks.json ->
			// ../tools/tasks.json).
			if why := literal.pathReasons(l.path); len(why) > 0 {
				r.follow(literal, looks[i+1], u.tops, protectedSpelling{path: split(l.path), name: l.path, writable: literal.writable,
					moved: func(string) string { return fmt.Sprintf("%s (your link %s leads here)", why[0], l.path) }})
			}
		}
	}
	for i, f := range u.trees {
		for _, d := range f.gitDirs {
			r.moved = append(r.moved, u.lookAlikePlaces(d, looks[i+1])...)
		}
	}
	return r
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

// follow walks s through look's links: where it ends is a place (unless
// that is s itself), and each path it passes that literal does not already
// protect is a way.
func (r *rules) follow(literal rules, look linkLookup, tops []string, s protectedSpelling) {
	loc, passed, ok := resolvePath(look, tops, s.path)
	for _, p := range passed {
		pc := split(p)
		if under(pc, s.path) || ok && under(pc, loc) || len(literal.pathReasons(p)) > 0 {
			continue
		}
		if k := foldKey(pc); r.ways[k] == "" {
			r.ways[k] = fmt.Sprintf("on the way to %s through your links: a file or link here moves what host tools read there", s.name)
		}
	}
	if !ok || slices.Equal(loc, s.path) {
		return
	}
	m := place{at: loc, why: s.moved(strings.Join(loc, "/"))}
	for _, w := range s.writable {
		if wl, _, ok := resolvePath(look, tops, w); ok && under(wl, loc) {
			m.exempt = append(m.exempt, wl)
		}
	}
	r.moved = append(r.moved, m)
}

// lookAlikePlaces are the places of a repository look-alike d of a user's
// tree (whose links look reads): d, and the directory its commondir names.
func (u *userTrees) lookAlikePlaces(d gitDirFact, look linkLookup) []place {
	at := split(d.path)
	out := []place{{at: at, gitDir: true, why: fmt.Sprintf(
		"inside %s, which git takes for a repository: git run inside it reads its config and runs its hooks; only its objects and refs may change", dirName(d.path))}}
	c := strings.TrimRight(u.targets[d.commondir].target, "\r\n")
	if d.commondir == "" || c == "" {
		return out
	}
	comps, abs, inside := targetComps(c, u.tops)
	if !inside {
		return out
	}
	if !abs {
		comps = append(slices.Clone(at), comps...)
	}
	if loc, _, ok := resolvePath(look, u.tops, comps); ok {
		out = append(out, place{at: loc, gitDir: true, why: fmt.Sprintf(
			"inside %s, the common directory (commondir) of %s, which git takes for a repository: git run inside it reads this config and runs these hooks; only objects and refs may change", dirName(strings.Join(loc, "/")), dirName(d.path))})
	}
	return out
}
