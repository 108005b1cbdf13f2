package debian

import (
	"fmt"
	"sort"
	"strings"
)

// index is the packages of one release and architecture, across its suites.
type index struct {
	byName    map[string][]Package // in suite order
	providers map[string][]string  // virtual name -> sorted providers
}

// newIndex indexes the packages of arch and "all" in lists, in suite order,
// and the Provides of each package's candidate.
func newIndex(arch string, lists [][]Package) (*index, error) {
	idx := &index{byName: map[string][]Package{}, providers: map[string][]string{}}
	for _, list := range lists {
		for _, p := range list {
			if p.Architecture == arch || p.Architecture == "all" {
				idx.byName[p.Name] = append(idx.byName[p.Name], p)
			}
		}
	}
	for name := range idx.byName {
		c := idx.candidate(name)
		virtuals, err := relations(c.Provides)
		if err != nil {
			return nil, fmt.Errorf("package %q version %s: Provides: %w", c.Name, c.Version, err)
		}
		for _, v := range virtuals {
			idx.providers[v] = append(idx.providers[v], name)
		}
	}
	for v, ps := range idx.providers {
		sort.Strings(ps)
		idx.providers[v] = compact(ps)
	}
	return idx, nil
}

// candidate returns apt's candidate for a name at equal pin priorities: the
// highest version, the first suite's stanza on a tie.
func (idx *index) candidate(name string) Package {
	var best Package
	for i, p := range idx.byName[name] {
		if i == 0 || CompareVersions(p.Version, best.Version) > 0 {
			best = p
		}
	}
	return best
}

// choose picks the stanza of each request. where names the release and
// architecture, ts the snapshot, for errors.
func (idx *index) choose(reqs []request, where, ts string) (map[string]Package, []error) {
	roots := map[string]Package{}
	var errs []error
	for _, r := range reqs {
		stanzas := idx.byName[r.name]
		if len(stanzas) == 0 {
			if ps := idx.providers[r.name]; len(ps) > 0 {
				errs = append(errs, fmt.Errorf("package %q is virtual in %s; name one of its providers: %s",
					r.name, where, strings.Join(ps, ", ")))
			} else {
				errs = append(errs, fmt.Errorf("package %q is not in %s at snapshot %s", r.name, where, ts))
			}
			continue
		}
		if r.version == "" {
			roots[r.name] = idx.candidate(r.name)
			continue
		}
		p, ok := find(stanzas, r.version)
		if !ok {
			errs = append(errs, fmt.Errorf("package %q has no version %q in %s at snapshot %s; it has %s",
				r.name, r.version, where, ts, strings.Join(versions(stanzas), ", ")))
			continue
		}
		roots[r.name] = p
	}
	return roots, errs
}

// find returns the first stanza of version v.
func find(stanzas []Package, v string) (Package, bool) {
	for _, p := range stanzas {
		if p.Version == v {
			return p, true
		}
	}
	return Package{}, false
}

// versions returns the distinct versions of stanzas, lowest first.
func versions(stanzas []Package) []string {
	var vs []string
	for _, p := range stanzas {
		vs = append(vs, p.Version)
	}
	sort.Slice(vs, func(i, j int) bool { return CompareVersions(vs[i], vs[j]) < 0 })
	return compact(vs)
}

// compact removes adjacent duplicates from a sorted slice.
func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// closure walks Depends and Pre-Depends from roots and returns the sorted
// lines "name=version\n" of every package reached, roots included.
func (idx *index) closure(roots map[string]Package) ([]string, error) {
	chosen := map[string]Package{}
	var queue []string
	for name := range roots {
		queue = append(queue, name)
	}
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if _, done := chosen[name]; done {
			continue
		}
		p, ok := roots[name]
		if !ok {
			p = idx.candidate(name)
		}
		chosen[name] = p
		for _, f := range [][2]string{{"Pre-Depends", p.PreDepends}, {"Depends", p.Depends}} {
			deps, err := relations(f[1])
			if err != nil {
				return nil, fmt.Errorf("package %q version %s: %s: %w", p.Name, p.Version, f[0], err)
			}
			for _, d := range deps {
				if _, real := idx.byName[d]; real {
					queue = append(queue, d)
				}
				queue = append(queue, idx.providers[d]...)
			}
		}
	}
	lines := make([]string, 0, len(chosen))
	for name, p := range chosen {
		lines = append(lines, name+"="+p.Version+"\n")
	}
	sort.Strings(lines)
	return lines, nil
}
