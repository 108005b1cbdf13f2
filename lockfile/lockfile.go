package lockfile

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"go.yaml.in/yaml/v3"
)

// File is the name of the lock file beside agentbox.yaml.
const File = "agentbox.lock"

// Version is the lock format this agentbox writes. Version 1 (image
// digests and the CLI's version only) is read, so that bump can say what
// changed, but nothing is generated from it.
const Version = 2

// Lock pins everything a build installs: every image reference to a
// digest, the agent CLI's whole npm dependency tree, and the Debian
// packages of both images to a dated snapshot of the archive and exact
// versions. `agentbox bump` writes it; `agentbox generate` only reads it.
type Lock struct {
	FormatVersion int
	Images        map[string]string    // "repo:tag" as written -> "sha256:..."
	NPM           map[string]*npm.Tree // npm package -> its tree (Packages nil in a version 1 lock)
	Debian        *Debian              // nil in a version 1 lock
	keys          map[string]string    // Ref.Key() -> digest
	pos           yamlpos.Positions    // where each key is written; nil for a lock not parsed
}

// Positions are where each key of the parsed lock is written (paths as
// yamlpos.Join makes them); nil for a lock made in memory.
func (l *Lock) Positions() yamlpos.Positions { return l.pos }

// Debian pins the Debian packages of the images.
type Debian struct {
	Snapshot         string            // the archive's state, YYYYMMDDTHHMMSSZ
	SecuritySnapshot string            // the security archive's state
	Releases         map[string]string // image "repo:tag" -> release codename
	// Pins holds, per release and architecture, the version of every
	// package agentbox installs by name.
	Pins map[string]map[string]ArchPins
}

// ArchPins are the packages of one release on one architecture.
type ArchPins struct {
	Closure  string            // sha256 over the packages and their whole dependency closure
	Versions map[string]string // package -> version
}

// Release returns the Debian release the lock records for image r.
func (d *Debian) Release(r images.Ref) (string, bool) {
	for k, rel := range d.Releases {
		if kr, err := images.ParseRef(k); err == nil && kr.Key() == r.Key() {
			return rel, true
		}
	}
	return "", false
}

// Architectures are the ones bump pins packages for.
var Architectures = []string{"amd64", "arm64"}

var (
	timestampRe = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z$`)
	codenameRe  = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	closureRe   = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// ValidCodename reports whether s can be a Debian release codename.
func ValidCodename(s string) bool { return codenameRe.MatchString(s) }

type lockFile struct {
	Version *int                      `yaml:"version"`
	Images  map[string]string         `yaml:"images"`
	Debian  *lockDebian               `yaml:"debian"`
	NPM     map[string]lockNPMPackage `yaml:"npm"`
}

type lockDebian struct {
	Snapshot         string                         `yaml:"snapshot"`
	SecuritySnapshot string                         `yaml:"security_snapshot"`
	Releases         map[string]string              `yaml:"releases"`
	Packages         map[string]map[string]lockArch `yaml:"packages"`
}

type lockArch struct {
	Closure  string            `yaml:"closure"`
	Packages map[string]string `yaml:"packages"`
}

// lockNPMPackage is "1.2.3" (version 1) or {version, packages}.
type lockNPMPackage struct {
	Version  string               `yaml:"version"`
	Packages map[string]npm.Entry `yaml:"packages"`
}

// UnmarshalNode accepts version 1's plain version string.
func (w *lockNPMPackage) UnmarshalNode(d *yamlpos.Decoder, n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode {
		if s, ok := d.Scalar(n, path, "!!str", "a version or a mapping"); ok {
			w.Version = s
		}
		return
	}
	type plain lockNPMPackage
	d.DecodeInto(n, path, (*plain)(w))
}

// Parse parses and validates a lock file; errors carry file:line:col.
func Parse(file string, data []byte) (*Lock, error) {
	var w lockFile
	pos, err := yamlpos.Decode(file, data, &w)
	if err != nil {
		return nil, err
	}
	errs := &yamlpos.Errors{File: file}
	l := &Lock{Images: map[string]string{}, NPM: map[string]*npm.Tree{}, keys: map[string]string{}}
	switch {
	case w.Version == nil:
		errs.Add(yamlpos.Pos{Line: 1, Col: 1}, "", "missing key \"version\" (want version: %d)", Version)
	case *w.Version < 1 || *w.Version > Version:
		errs.Add(pos["version"], "version", "unsupported lock version %d (this agentbox reads versions 1 and %d)", *w.Version, Version)
	default:
		l.FormatVersion = *w.Version
	}
	parseImages(l, w.Images, pos, errs)
	parseNPM(l, w.NPM, pos, errs)
	if w.Debian != nil {
		l.Debian = parseDebian(w.Debian, pos, errs)
	}
	if l.FormatVersion == 1 && w.Debian != nil {
		errs.Add(pos["debian"], "debian", "a version 1 lock has no debian section (want version: %d)", Version)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	l.pos = pos
	return l, nil
}

func parseImages(l *Lock, digests map[string]string, pos yamlpos.Positions, errs *yamlpos.Errors) {
	seen := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(digests)) {
		path := yamlpos.Join("images", k)
		r, err := images.ParseRef(k)
		switch {
		case err != nil:
			errs.Add(pos[path], path, "%v", err)
		case r.Pinned():
			errs.Add(pos[path], path, "a lock key is repo:tag without a digest")
		case !images.ValidDigest(digests[k]):
			errs.Add(pos[path], path, "invalid digest %q: want sha256:<64 lowercase hex>", digests[k])
		case seen[r.Key()] != "":
			errs.Add(pos[path], path, "the same image as %q", seen[r.Key()])
		default:
			seen[r.Key()] = k
			l.Images[k] = digests[k]
			l.keys[r.Key()] = digests[k]
		}
	}
}

func parseNPM(l *Lock, pkgs map[string]lockNPMPackage, pos yamlpos.Positions, errs *yamlpos.Errors) {
	for _, k := range slices.Sorted(maps.Keys(pkgs)) {
		path := yamlpos.Join("npm", k)
		w := pkgs[k]
		if !npm.ValidNewName(k) {
			errs.Add(pos[path], path, "invalid npm package name %q", k)
			continue
		}
		if !npm.ValidVersion(w.Version) {
			errs.Add(pos[path], path, "invalid version %q: want an exact version such as 1.2.3", w.Version)
			continue
		}
		t := &npm.Tree{Name: k, Version: w.Version}
		if l.FormatVersion == 1 || w.Packages == nil {
			l.NPM[k] = t // no tree: generate says to run bump
			continue
		}
		t.Packages = w.Packages
		if err := t.Check(); err != nil {
			at := yamlpos.Join(path, "packages")
			if p, _, ok := strings.Cut(err.Error(), ": "); ok && pos[yamlpos.Join(at, p)].Line != 0 {
				at = yamlpos.Join(at, p)
			}
			errs.Add(pos[at], at, "%v", err)
			continue
		}
		l.NPM[k] = t
	}
}

func parseDebian(w *lockDebian, pos yamlpos.Positions, errs *yamlpos.Errors) *Debian {
	d := &Debian{Snapshot: w.Snapshot, SecuritySnapshot: w.SecuritySnapshot, Releases: map[string]string{}, Pins: map[string]map[string]ArchPins{}}
	for key, ts := range map[string]string{"debian.snapshot": w.Snapshot, "debian.security_snapshot": w.SecuritySnapshot} {
		if !timestampRe.MatchString(ts) {
			errs.Add(pos[key], key, "invalid snapshot %q: want a timestamp such as 20260102T030405Z", ts)
		}
	}
	for _, img := range slices.Sorted(maps.Keys(w.Releases)) {
		path := yamlpos.Join("debian.releases", img)
		if _, err := images.ParseRef(img); err != nil || !ValidCodename(w.Releases[img]) {
			errs.Add(pos[path], path, "want an image's repo:tag and its Debian release codename, not %q: %q", img, w.Releases[img])
			continue
		}
		d.Releases[img] = w.Releases[img]
	}
	for _, rel := range slices.Sorted(maps.Keys(w.Packages)) {
		rpath := yamlpos.Join("debian.packages", rel)
		if !ValidCodename(rel) {
			errs.Add(pos[rpath], rpath, "invalid release codename %q", rel)
			continue
		}
		d.Pins[rel] = map[string]ArchPins{}
		for _, arch := range slices.Sorted(maps.Keys(w.Packages[rel])) {
			apath := yamlpos.Join(rpath, arch)
			a := w.Packages[rel][arch]
			if !slices.Contains(Architectures, arch) {
				errs.Add(pos[apath], apath, "unknown architecture %q (want one of %s)", arch, strings.Join(Architectures, ", "))
				continue
			}
			if !closureRe.MatchString(a.Closure) {
				errs.Add(pos[yamlpos.Join(apath, "closure")], yamlpos.Join(apath, "closure"), "invalid closure digest %q", a.Closure)
			}
			pins := ArchPins{Closure: a.Closure, Versions: map[string]string{}}
			for _, name := range slices.Sorted(maps.Keys(a.Packages)) {
				ppath := yamlpos.Join(yamlpos.Join(apath, "packages"), name)
				if v := a.Packages[name]; !debian.ValidPackageName(name) || !debian.ValidVersion(v) {
					errs.Add(pos[ppath], ppath, "want a Debian package name and its exact version, not %q: %q", name, v)
					continue
				}
				pins.Versions[name] = a.Packages[name]
			}
			d.Pins[rel][arch] = pins
		}
	}
	return d
}

// Digest returns the pinned digest of r's repo:tag.
func (l *Lock) Digest(r images.Ref) (string, bool) {
	if l == nil {
		return "", false
	}
	if l.keys == nil {
		l.keys = map[string]string{}
		for k, d := range l.Images {
			if r, err := images.ParseRef(k); err == nil {
				l.keys[r.Key()] = d
			}
		}
	}
	d, ok := l.keys[r.Key()]
	return d, ok
}

// Version returns the pinned version of an npm package.
func (l *Lock) Version(pkg string) (string, bool) {
	if l == nil || l.NPM[pkg] == nil {
		return "", false
	}
	return l.NPM[pkg].Version, true
}

// Tree returns the pinned dependency tree of an npm package, if the lock
// has one.
func (l *Lock) Tree(pkg string) (*npm.Tree, bool) {
	if l == nil || l.NPM[pkg] == nil || l.NPM[pkg].Packages == nil {
		return nil, false
	}
	return l.NPM[pkg], true
}

// Marshal renders the lock deterministically, in the current format.
func (l *Lock) Marshal() []byte {
	var b strings.Builder
	q := strconv.Quote
	b.WriteString("# agentbox.lock: what agentbox builds from: image digests, the Debian archive's\n")
	b.WriteString("# snapshot and package versions, and the agent CLI's whole npm dependency tree.\n")
	b.WriteString("# Written by `agentbox bump`; `agentbox generate` only reads it and never resolves anything.\n")
	fmt.Fprintf(&b, "version: %d\n", Version)
	if len(l.Images) > 0 {
		b.WriteString("images:\n")
		for _, k := range slices.Sorted(maps.Keys(l.Images)) {
			fmt.Fprintf(&b, "  %s: %s\n", q(k), q(l.Images[k]))
		}
	}
	if d := l.Debian; d != nil {
		fmt.Fprintf(&b, "debian:\n  snapshot: %s\n  security_snapshot: %s\n", q(d.Snapshot), q(d.SecuritySnapshot))
		b.WriteString("  releases:\n")
		for _, k := range slices.Sorted(maps.Keys(d.Releases)) {
			fmt.Fprintf(&b, "    %s: %s\n", q(k), q(d.Releases[k]))
		}
		b.WriteString("  packages:\n")
		for _, rel := range slices.Sorted(maps.Keys(d.Pins)) {
			fmt.Fprintf(&b, "    %s:\n", q(rel))
			for _, arch := range slices.Sorted(maps.Keys(d.Pins[rel])) {
				a := d.Pins[rel][arch]
				fmt.Fprintf(&b, "      %s:\n        closure: %s\n        packages:\n", q(arch), q(a.Closure))
				for _, name := range slices.Sorted(maps.Keys(a.Versions)) {
					fmt.Fprintf(&b, "          %s: %s\n", q(name), q(a.Versions[name]))
				}
			}
		}
	}
	if len(l.NPM) > 0 {
		b.WriteString("npm:\n")
		for _, k := range slices.Sorted(maps.Keys(l.NPM)) {
			t := l.NPM[k]
			fmt.Fprintf(&b, "  %s:\n    version: %s\n    packages:\n", q(k), q(t.Version))
			for _, p := range slices.Sorted(maps.Keys(t.Packages)) {
				fmt.Fprintf(&b, "      %s: %s\n", q(p), flowEntry(t.Packages[p]))
			}
		}
	}
	return []byte(b.String())
}

// flowEntry writes one package of a tree on one line, so that a change of
// one package is a change of one line.
func flowEntry(e npm.Entry) string {
	q := strconv.Quote
	var f []string
	add := func(k, v string) { f = append(f, k+": "+v) }
	if e.Name != "" {
		add("name", q(e.Name))
	}
	add("version", q(e.Version))
	add("integrity", q(e.Integrity))
	if e.Optional {
		add("optional", "true")
	}
	if e.HasInstallScript {
		add("install_script", "true")
	}
	for _, m := range []struct {
		k string
		v map[string]string
	}{{"dependencies", e.Dependencies}, {"optional_dependencies", e.OptionalDependencies},
		{"peer_dependencies", e.PeerDependencies}, {"bin", e.Bin}} {
		if len(m.v) > 0 {
			var kv []string
			for _, k := range slices.Sorted(maps.Keys(m.v)) {
				kv = append(kv, q(k)+": "+q(m.v[k]))
			}
			add(m.k, "{"+strings.Join(kv, ", ")+"}")
		}
	}
	for _, l := range []struct {
		k string
		v []string
	}{{"optional_peers", e.OptionalPeers}, {"os", e.OS}, {"cpu", e.CPU}, {"libc", e.Libc}} {
		if len(l.v) > 0 {
			var vs []string
			for _, s := range l.v {
				vs = append(vs, q(s))
			}
			add(l.k, "["+strings.Join(vs, ", ")+"]")
		}
	}
	return "{" + strings.Join(f, ", ") + "}"
}

// DebianArchive is Debian's snapshot service: every state of the archive,
// by timestamp, at <archive>/debian/<timestamp>/ and
// <archive>/debian-security/<timestamp>/. AGENTBOX_DEBIAN_ARCHIVE names a
// copy with the same layout, for bump and for builds.
const DebianArchive = "https://snapshot.debian.org/archive"

// Keys are the paths of every key agentbox.lock can hold, from its wire
// format: "a.b" a key below another, "*" any name (an image, a release, an
// architecture, a package). The review declares each (review.LockKeys).
func Keys() []string {
	var out []string
	var walk func(path string, t reflect.Type)
	walk = func(path string, t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t.Kind() == reflect.Struct:
			for f := range t.Fields() {
				name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				walk(strings.TrimPrefix(path+"."+name, "."), f.Type)
			}
		case t.Kind() == reflect.Map && (t.Elem().Kind() == reflect.Struct || t.Elem().Kind() == reflect.Map):
			walk(path+".*", t.Elem())
		default:
			out = append(out, path)
		}
	}
	walk("", reflect.TypeFor[lockFile]())
	return out
}
