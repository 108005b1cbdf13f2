package review

import (
	"maps"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// Risk is the kind of a DiffRow that weakens the supply chain: the sandbox
// would build from inputs whose provenance a plain pin move does not
// explain. A risk always carries a Warning that says which.
//
// The risks (docs/review.md):
//   - a package new to the agent CLI's tree, one moved in it, one at a
//     lower version, and one whose tarball changed under the same version
//     (each package its own row; an upgrade is a pin, a removal a pin),
//     and one that has an install script now (npm runs it at the build);
//   - the agent CLI or a Debian package at a lower version (on either
//     architecture), the Debian snapshot moved back in time;
//   - an image moved to another repository.
const Risk = "risk"

// The warnings of the risks.
const (
	warnDowngrade = "a lower version: a downgrade brings back what later versions fixed"
	warnArch      = "a lower version on one architecture: a downgrade brings back what later versions fixed"
	warnSnapshot  = "the snapshot moved back in time: older packages than the base pinned"
	warnRepo      = "another repository: another publisher's image, not a new digest of the same one"
	warnAdded     = "new in the agent CLI's tree: code that ran nowhere in the sandbox before"
	warnMoved     = "moved in the tree: other packages' require() may now find this copy"
	warnAlias     = "another package under the same name: the alias now names other code"
	warnAddedRun  = "new in the agent CLI's tree, with an install script that runs when the agent image builds"
	warnScript    = "an install script now, which runs when the agent image builds"
	warnTarball   = "the tarball changed under the same version: the registry serves other code for a version it had published"
)

// markRisks turns the pin and change rows of images, the agent CLI, Debian
// packages and snapshots that weaken the supply chain into risks.
func markRisks(rows []DiffRow) []DiffRow {
	for i, r := range rows {
		if r.From == "" || r.To == "" {
			continue
		}
		var w string
		switch r.What {
		case "image":
			if imageRepo(r.From) != imageRepo(r.To) {
				w = warnRepo
			}
		case "package":
			if before(r.From, "@") == before(r.To, "@") && lowerNPM(after(r.From, "@"), after(r.To, "@")) {
				w = warnDowngrade
			}
		case "debian":
			w = debianRisk(r.From, r.To)
		case "snapshot":
			if after(r.To, "@") < after(r.From, "@") {
				w = warnSnapshot
			}
		}
		if w != "" {
			rows[i].Kind, rows[i].Warning = Risk, w
		}
	}
	return rows
}

// after is s after its last sep.
func after(s, sep string) string { return s[strings.LastIndex(s, sep)+1:] }

// imageRepo is an image value's repository: "repo:tag@digest" without tag
// and digest (a registry's port stays).
func imageRepo(v string) string {
	s, _, _ := strings.Cut(v, "@")
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") {
		s = s[:i]
	}
	return s
}

// lowerNPM reports whether version to is below version from.
func lowerNPM(from, to string) bool {
	a, errA := npm.ParseVersion(from)
	b, errB := npm.ParseVersion(to)
	return errA == nil && errB == nil && npm.Compare(b, a) < 0
}

// debianRisk compares two Debian pins, "name@version" with
// " (arm64: version)" where that architecture's differs.
func debianRisk(from, to string) string {
	a, b := debianVersions(from), debianVersions(to)
	lower := 0
	for _, arch := range lockfile.Architectures {
		if a[arch] != "" && b[arch] != "" && debian.CompareVersions(b[arch], a[arch]) < 0 {
			lower++
		}
	}
	switch {
	case lower == 0:
		return ""
	case lower < len(lockfile.Architectures):
		return warnArch
	}
	return warnDowngrade
}

// debianVersions reads a Debian pin's version per architecture.
func debianVersions(v string) map[string]string {
	_, v, _ = strings.Cut(v, "@")
	v, others, _ := strings.Cut(v, " (")
	m := map[string]string{}
	for _, arch := range lockfile.Architectures {
		m[arch] = v
	}
	for _, o := range strings.Split(strings.TrimSuffix(others, ")"), ", ") {
		if arch, w, ok := strings.Cut(o, ": "); ok {
			m[arch] = w
		}
	}
	return m
}

// supplyRows compares the agent CLI's tree on both sides, package by
// package: one row for each package added, removed, moved, upgraded,
// downgraded, or whose tarball changed under its version. The CLI's own
// version has its row already (package, agent CLI). A tree of another CLI
// is another agent, whose row says so.
func supplyRows(base, head *Sandbox) []DiffRow {
	if base == nil || base.npmTree == nil || head.npmTree == nil || base.npmTree.Name != head.npmTree.Name ||
		base.npmTree.Packages == nil || head.npmTree.Packages == nil {
		return nil
	}
	orig := Origin{}
	if i := slices.IndexFunc(head.Pins, func(p Pin) bool { return p.Kind == "tree" }); i >= 0 {
		orig = withLine(head.Pins[i].Origin, head)
	}
	old, cur := base.npmTree.Packages, head.npmTree.Packages
	self := "node_modules/" + head.npmTree.Name
	row := func(kind, path, from, to, warn string) DiffRow {
		return packageRow(DiffRow{Kind: kind, Aspect: GainCode, What: "npm package", Subject: strings.TrimPrefix(path, "node_modules/"),
			From: from, To: to, Side: "working", Warning: warn, Origin: orig}, path, base, head)
	}
	// moved: a package at a path only head has, at its version at a path
	// only base has.
	gone := map[string]string{} // name@version -> a path only base has
	for _, p := range slices.Sorted(maps.Keys(old)) {
		if _, ok := cur[p]; !ok {
			gone[old[p].ID(p)] = p
		}
	}
	var rows []DiffRow
	for _, p := range slices.Sorted(maps.Keys(cur)) {
		b := cur[p]
		a, had := old[p]
		switch {
		case !had:
			if from, ok := gone[b.ID(p)]; ok {
				delete(gone, b.ID(p))
				rows = append(rows, row(Risk, p, b.ID(p)+" at "+strings.TrimPrefix(from, "node_modules/"), b.ID(p), warnMoved))
				continue
			}
			w := warnAdded
			if b.HasInstallScript {
				w = warnAddedRun
			}
			rows = append(rows, row(Risk, p, "", b.ID(p), w))
		case a.Name != b.Name:
			rows = append(rows, row(Risk, p, a.ID(p), b.ID(p), warnAlias))
		case a.ID(p) != b.ID(p) && lowerNPM(a.Version, b.Version):
			rows = append(rows, row(Risk, p, a.ID(p), b.ID(p), warnDowngrade))
		case a.ID(p) == b.ID(p) && a.Integrity != b.Integrity:
			rows = append(rows, row(Risk, p, a.ID(p)+" "+a.Integrity, b.ID(p)+" "+b.Integrity, warnTarball))
		case b.HasInstallScript && !a.HasInstallScript:
			rows = append(rows, row(Risk, p, a.ID(p), b.ID(p), warnScript))
		case a.ID(p) != b.ID(p) && p != self:
			rows = append(rows, row(Pinned, p, a.ID(p), b.ID(p), ""))
		}
	}
	for _, p := range slices.Sorted(maps.Values(gone)) {
		rows = append(rows, row(Pinned, p, old[p].ID(p), "", ""))
	}
	return rows
}

// packageRow cites the entry of the tree's package at path in
// agentbox.lock (the base's, for a package removed), where the row cited
// the tree's origin.
func packageRow(r DiffRow, path string, base, head *Sandbox) DiffRow {
	side := "working"
	if r.To == "" {
		side = "base"
	}
	if o, ok := lockAt(yamlpos.Join(treeLockKey(head.npmTree.Name), path), side, base, head); ok {
		r.Origin, r.Side = o, side
	}
	return r
}
