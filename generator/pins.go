package generator

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// The agent CLI's npm project: generated from the lock's tree, installed
// with npm ci into NPMDir.
const (
	NPMPackageFile = OutDir + "/npm/package.json"
	NPMLockFile    = OutDir + "/npm/package-lock.json"
	NPMDir         = "/opt/agentbox/npm"
)

// nodePackages are installed in an npm agent's image whose base has no npm.
var nodePackages = []string{"nodejs", "npm"}

// AptPlan is how one image installs its Debian packages: from the lock's
// snapshot of the archive, at the lock's versions.
type AptPlan struct {
	Release          string
	Snapshot         string
	SecuritySnapshot string
	DefaultArchive   string
	Node             bool // install Node when the base image has no npm
	Arches           []AptArch
	// The build secret with the settings' CA, which apt trusts for the
	// step, and those naming the archive (internal/settings).
	SecretCA, SecretCAPath                      string
	ArchiveSecret, LayoutSecret, SecuritySecret string
}

// AptArch holds one architecture's name=version pins.
type AptArch struct {
	Arch string
	Pins []string
	Node []string
}

// debianPackage is a package an image installs, and where it is asked for.
type debianPackage struct {
	Name, Version string // Version: pinned in agentbox.yaml, else ""
	Path          string
	Pos           yamlpos.Pos
}

// DebianNames lists the Debian packages each image installs by name: the
// agent's (its Node packages apart) and the egress image's. Bump resolves
// their versions; a name=version of agentbox.yaml stays as written.
func DebianNames(cfg *config.Config) (agent, node, egress []string) {
	for _, p := range agentPackages(cfg, cfg.ImageSpecs()[0]) {
		if p.Version != "" {
			agent = append(agent, p.Name+"="+p.Version)
		} else {
			agent = append(agent, p.Name)
		}
	}
	if cfg.Agent.Package != "" {
		node = slices.Clone(nodePackages)
	}
	return agent, node, slices.Clone(firewall.Packages)
}

func agentPackages(cfg *config.Config, s config.ImageSpec) []debianPackage {
	seen := map[string]bool{}
	var out []debianPackage
	for _, name := range config.BasePackages {
		seen[name] = true
		out = append(out, debianPackage{Name: name, Path: s.Path, Pos: s.Pos})
	}
	for i, p := range cfg.Packages {
		name, version, _ := strings.Cut(p, "=")
		if seen[name] {
			continue
		}
		seen[name] = true
		path := fmt.Sprintf("image.packages[%d]", i)
		out = append(out, debianPackage{Name: name, Version: version, Path: path, Pos: cfg.PackagesPos[i]})
	}
	slices.SortFunc(out, func(a, b debianPackage) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// aptPlan pins an image's packages from the lock; what the lock lacks is
// reported at the key that asks for it.
func aptPlan(s config.ImageSpec, pkgs []debianPackage, node bool, lock *lockfile.Lock, errs *yamlpos.Errors) *AptPlan {
	rerun := "; run \"agentbox bump\""
	if lock == nil {
		return nil // pin has said that the lock is missing
	}
	d := lock.Debian
	if d == nil {
		errs.Add(s.Pos, s.Path, "%s: %s pins no Debian packages (an older agentbox wrote it)%s", s.What, lockfile.File, rerun)
		return nil
	}
	release, ok := d.Release(s.Ref)
	if !ok || len(d.Pins[release]) == 0 {
		errs.Add(s.Pos, s.Path, "%s: %s has no Debian release and packages for it%s", s.What, lockfile.File, rerun)
		return nil
	}
	ap := &AptPlan{Release: release, Snapshot: d.Snapshot, SecuritySnapshot: d.SecuritySnapshot,
		DefaultArchive: lockfile.DebianArchive, Node: node,
		SecretCA: settings.SecretCA, SecretCAPath: settings.SecretCAPath,
		ArchiveSecret: settings.SecretDebianArchive, LayoutSecret: settings.SecretDebianLayout,
		SecuritySecret: settings.SecretDebianSecurity}
	for _, arch := range slices.Sorted(maps.Keys(d.Pins[release])) {
		pins := d.Pins[release][arch]
		a := AptArch{Arch: arch}
		for _, p := range pkgs {
			v, ok := pins.Versions[p.Name]
			switch {
			case !ok:
				errs.Add(p.Pos, p.Path, "Debian package %q has no version for %s/%s in %s%s", p.Name, release, arch, lockfile.File, rerun)
			case p.Version != "" && p.Version != v:
				errs.Add(p.Pos, p.Path, "%s=%s, but %s pins %s for %s/%s%s", p.Name, p.Version, lockfile.File, v, release, arch, rerun)
			}
			a.Pins = append(a.Pins, p.Name+"="+v)
		}
		if node {
			for _, name := range nodePackages {
				v, ok := pins.Versions[name]
				if !ok {
					errs.Add(s.Pos, s.Path, "Debian package %q (Node, for the agent CLI) has no version for %s/%s in %s%s", name, release, arch, lockfile.File, rerun)
				}
				a.Node = append(a.Node, name+"="+v)
			}
		}
		ap.Arches = append(ap.Arches, a)
	}
	return ap
}

// egressPackages are the egress image's packages, asked for by no key.
func egressPackages(s config.ImageSpec) []debianPackage {
	var out []debianPackage
	for _, name := range firewall.Packages {
		out = append(out, debianPackage{Name: name, Path: s.Path, Pos: s.Pos})
	}
	return out
}
