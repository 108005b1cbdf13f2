package bump

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// ChangedTarballError is a registry that serves another tarball (another
// integrity) for a package version that agentbox.lock pins. npm's registry
// never republishes a version, so the registry, a mirror or a cache serves
// other code under a name and version the lock vouched for.
type ChangedTarballError struct {
	Changed []ChangedTarball
}

// ChangedTarball is one package version whose integrity changed.
type ChangedTarball struct {
	Package string // name@version
	Old     string // the integrity in agentbox.lock
	New     string // the registry's now
}

func (e *ChangedTarballError) Error() string {
	var b strings.Builder
	b.WriteString("npm: the registry serves another tarball for a version agentbox.lock pins:")
	var names []string
	for _, c := range e.Changed {
		fmt.Fprintf(&b, "\n  %s: integrity %s in agentbox.lock, %s now", c.Package, c.Old, c.New)
		names = append(names, "--accept-changed-tarball "+c.Package)
	}
	b.WriteString("\na version's tarball never changes on npm's registry: this registry, a mirror or a cache serves other code under it. Nothing was written. If you trust the new tarball, run agentbox bump " + strings.Join(names, " "))
	return b.String()
}

// checkTarballs compares each package of tree with the same name and
// version anywhere in old's trees, and refuses another integrity unless
// accept names it (NAME@VERSION); an accepted one is a warning in res.
func checkTarballs(old *lockfile.Lock, tree *npm.Tree, accept []string, res *Result) error {
	if old == nil {
		return nil
	}
	pinned := map[string]string{} // name@version -> integrity
	for _, t := range old.NPM {
		for p, e := range t.Packages {
			pinned[e.ID(p)] = e.Integrity
		}
	}
	seen := map[string]bool{}
	err := &ChangedTarballError{}
	for _, p := range slices.Sorted(maps.Keys(tree.Packages)) {
		e := tree.Packages[p]
		id := e.ID(p)
		was, ok := pinned[id]
		if !ok || was == e.Integrity || seen[id] {
			continue
		}
		seen[id] = true
		if slices.Contains(accept, id) {
			res.Warnings = append(res.Warnings, fmt.Sprintf("npm package %s: its tarball changed under the same version (integrity %s in agentbox.lock, %s now); recorded as --accept-changed-tarball asks", id, was, e.Integrity))
			continue
		}
		err.Changed = append(err.Changed, ChangedTarball{Package: id, Old: was, New: e.Integrity})
	}
	if len(err.Changed) > 0 {
		return err
	}
	return nil
}
