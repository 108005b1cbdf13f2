package npm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Registry reads package documents.
type Registry interface {
	Packument(ctx context.Context, name string) (*Packument, error)
}

// Tree is a package and every package it needs, each at one version, laid
// out as npm installs them: by path below the project ("node_modules/a",
// "node_modules/a/node_modules/b").
type Tree struct {
	Name, Version string
	Packages      map[string]Entry
	// Missing lists the optional dependencies the registry does not have,
	// left out as npm leaves them out: "name@range (optional, of a@1.0.0):
	// not in the registry".
	Missing []string
	// NodeEngines holds each package's engines.node range, by path, as
	// Resolve read it (a lock does not keep it): bump checks it against the
	// image's Node.
	NodeEngines map[string]string
}

// Entry is one installed package: what npm's package-lock.json records.
// The yaml keys are agentbox.lock's, which decodes into Entry directly.
type Entry struct {
	Name                 string            `yaml:"name"` // the real package name when the path names an alias
	Version              string            `yaml:"version"`
	Integrity            string            `yaml:"integrity"`
	Optional             bool              `yaml:"optional"` // reached only through optional dependencies
	HasInstallScript     bool              `yaml:"install_script"`
	Dependencies         map[string]string `yaml:"dependencies"`
	OptionalDependencies map[string]string `yaml:"optional_dependencies"`
	PeerDependencies     map[string]string `yaml:"peer_dependencies"`
	OptionalPeers        []string          `yaml:"optional_peers"`
	Bin                  map[string]string `yaml:"bin"`
	OS                   []string          `yaml:"os"`
	CPU                  []string          `yaml:"cpu"`
	Libc                 []string          `yaml:"libc"`
}

// noVersionError is a package none of whose versions is in the range
// wanted.
type noVersionError struct{ msg string }

func (e *noVersionError) Error() string { return e.msg }

// Limits of a tree and of the work to resolve it.
const (
	MaxPackages = 5000
	fetchers    = 16
)

// Resolve resolves name@version and, recursively, every dependency,
// optional dependency and required peer dependency to one registry
// version each, placed where Node's module resolution finds it: at the top
// when no other version is there, else under the package that needs it.
// An optional dependency that its dependent's entry names must be in the
// lock: npm ci refuses a lock that lacks it. So an optional dependency
// whose os, cpu or libc does not fit plat, or that the registry does not
// have, or has in no version in range (npm skips these too; any other
// failure to read it is an error), is left out of the tree and out of its
// dependent's entry. Tree.Missing lists those the registry lacks.
func Resolve(ctx context.Context, reg Registry, name, version string, plat Platform) (*Tree, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("invalid npm package name %q", name)
	}
	r := &resolver{ctx: ctx, reg: reg, plat: plat, docs: map[string]*future{}, sem: make(chan struct{}, fetchers),
		nodes: map[string]*node{}}
	root := &node{m: &Manifest{Name: "(the project)", Dependencies: map[string]string{name: version}}}
	r.nodes[""] = root
	r.queue = []*node{root}
	for len(r.queue) > 0 {
		n := r.queue[0]
		r.queue = r.queue[1:]
		if err := r.process(n); err != nil {
			return nil, err
		}
	}
	return r.tree(name, version)
}

type resolver struct {
	ctx   context.Context
	reg   Registry
	plat  Platform
	mu    sync.Mutex
	docs  map[string]*future
	sem   chan struct{}
	nodes map[string]*node
	queue []*node
	// missing are the optional dependencies the registry does not have.
	missing []string
}

type node struct {
	path  string // "" for the project itself
	name  string // the real package name
	m     *Manifest
	via   *node // the package whose dependency placed it
	edges []edge
	// unfit are the optional dependencies left out: of another platform.
	unfit map[string]bool
}

type edge struct {
	to       string
	optional bool
}

type future struct {
	done chan struct{}
	doc  *Packument
	err  error
}

// fetch starts reading name's document, once.
func (r *resolver) fetch(name string) *future {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.docs[name]; ok {
		return f
	}
	f := &future{done: make(chan struct{})}
	r.docs[name] = f
	go func() {
		defer close(f.done)
		select {
		case r.sem <- struct{}{}:
			defer func() { <-r.sem }()
			f.doc, f.err = r.reg.Packument(r.ctx, name)
		case <-r.ctx.Done():
			f.err = r.ctx.Err()
		}
	}()
	return f
}

func (r *resolver) doc(name string) (*Packument, error) {
	f := r.fetch(name)
	<-f.done
	return f.doc, f.err
}

// dep is one wanted dependency of a package.
type dep struct {
	key, spec      string
	optional, peer bool
}

func wanted(m *Manifest) []dep {
	var ds []dep
	add := func(deps map[string]string, optional, peer bool) {
		for _, k := range slices.Sorted(maps.Keys(deps)) {
			if peer && m.PeerDependenciesMeta[k].Optional {
				continue // npm installs an optional peer only when something else needs it
			}
			ds = append(ds, dep{k, deps[k], optional, peer})
		}
	}
	add(m.Dependencies, false, false)
	opt := map[string]string{}
	for k, v := range m.OptionalDependencies {
		opt[k] = v
	}
	add(opt, true, false)
	add(m.PeerDependencies, false, true)
	// An optional dependency overrides a regular one of the same name.
	seen := map[string]int{}
	var out []dep
	for _, d := range ds {
		if i, ok := seen[d.key]; ok {
			if d.optional {
				out[i] = d
			}
			continue
		}
		seen[d.key] = len(out)
		out = append(out, d)
	}
	return out
}

// process places every dependency of n.
func (r *resolver) process(n *node) error {
	ds := wanted(n.m)
	for _, d := range ds {
		if target, _, err := parseSpec(d.key, d.spec); err == nil && ValidName(target) {
			r.fetch(target)
		}
	}
	for _, d := range ds {
		if err := r.place(n, d); err != nil {
			return fmt.Errorf("%s: %w", r.describe(n), err)
		}
	}
	return nil
}

func (r *resolver) describe(n *node) string {
	var chain []string
	for ; n != nil && n.path != ""; n = n.via {
		chain = append(chain, n.name+"@"+n.m.Version)
	}
	slices.Reverse(chain)
	if len(chain) == 0 {
		return "the agent CLI"
	}
	return strings.Join(chain, " > ")
}

// place resolves one dependency of n: to the version already visible from
// where n (for a peer: n's parent) looks, if it fits, or else to a new one,
// at the top when nothing of that name is visible, else next to n.
func (r *resolver) place(n *node, d dep) error {
	if !ValidName(d.key) {
		return fmt.Errorf("dependency %q: not a valid npm package name", d.key)
	}
	target, want, err := parseSpec(d.key, d.spec)
	if err != nil {
		return err
	}
	rng, err := r.wantRange(target, want)
	if err != nil {
		return err
	}
	start := n.path
	if d.peer {
		start = parentDir(n.path)
	}
	found := r.lookup(start, d.key)
	if found != nil && found.name == target && rng.Satisfies(placedVersion(found.m.Version)) {
		n.edges = append(n.edges, edge{found.path, d.optional})
		return nil
	}
	at := "node_modules/" + d.key
	if found != nil {
		if d.peer || start == "" {
			return fmt.Errorf("peer dependency %s@%q conflicts with %s@%s at %s", target, d.spec, found.name, found.m.Version, found.path)
		}
		at = start + "/node_modules/" + d.key
	}
	m, err := r.pick(target, d.spec, rng)
	var nv *noVersionError
	if err != nil && d.optional && (errors.Is(err, ErrNotFound) || errors.As(err, &nv)) {
		why := "not in the registry"
		if nv != nil {
			why = "no version in range in the registry"
		}
		r.missing = append(r.missing, fmt.Sprintf("%s@%s (optional, of %s): %s", target, want, r.describe(n), why))
		m, err = nil, nil
	}
	if err != nil {
		return err
	}
	if d.optional && (m == nil || !r.plat.Fits(m)) {
		if n.unfit == nil {
			n.unfit = map[string]bool{}
		}
		n.unfit[d.key] = true
		return nil
	}
	if len(r.nodes) > MaxPackages {
		return fmt.Errorf("the dependency tree has more than %d packages", MaxPackages)
	}
	nn := &node{path: at, name: target, m: m, via: n}
	r.nodes[at] = nn
	r.queue = append(r.queue, nn)
	n.edges = append(n.edges, edge{at, d.optional})
	return nil
}

// lookup returns what Node's module resolution finds for key from dir.
func (r *resolver) lookup(dir, key string) *node {
	for {
		p := "node_modules/" + key
		if dir != "" {
			p = dir + "/" + p
		}
		if n, ok := r.nodes[p]; ok {
			return n
		}
		if dir == "" {
			return nil
		}
		dir = parentDir(dir)
	}
}

// parentDir returns the package directory that holds path's node_modules:
// "" for "node_modules/a", "node_modules/a" for "node_modules/a/node_modules/@s/b".
func parentDir(path string) string {
	i := strings.LastIndex(path, "node_modules/")
	if i <= 0 {
		return ""
	}
	return path[:i-1]
}

// parseSpec splits a dependency's wanted version into the registry package
// it names and the text of its range or tag: "^1.2.0", "latest", or
// "npm:other@^2" (an alias).
func parseSpec(key, spec string) (target, want string, err error) {
	target, want = key, strings.TrimSpace(spec)
	if rest, ok := strings.CutPrefix(want, "npm:"); ok {
		target, want = splitAlias(rest)
		if !ValidName(target) {
			return "", "", fmt.Errorf("dependency %q: %q aliases an invalid package name", key, spec)
		}
	}
	if !ValidSpec(want) {
		return "", "", fmt.Errorf("dependency %q: %q is not a registry version range or tag (agentbox pins registry packages only: no git, file, link or URL dependencies)", key, spec)
	}
	return target, want, nil
}

// wantRange turns a range or a dist-tag into a range.
func (r *resolver) wantRange(target, want string) (Range, error) {
	rng, err := ParseRange(want)
	if err == nil {
		return rng, nil
	}
	if !tagRe.MatchString(want) {
		return Range{}, fmt.Errorf("%s@%q: %v", target, want, err)
	}
	doc, derr := r.doc(target)
	if derr != nil {
		return Range{}, derr
	}
	v, ok := doc.DistTags[want]
	if !ok {
		return Range{}, fmt.Errorf("%s has no dist-tag %q", target, want)
	}
	return ParseRange(v)
}

// pick chooses the version npm would: the "latest" tag when it is in
// range, else the highest version in range that is not deprecated, else
// the highest in range.
func (r *resolver) pick(target, spec string, rng Range) (*Manifest, error) {
	doc, err := r.doc(target)
	if err != nil {
		return nil, err
	}
	choose := func(v string) (*Manifest, error) {
		m := doc.Versions[v]
		if m.Version != v {
			return nil, fmt.Errorf("%s@%s: the registry's document says version %q", target, v, m.Version)
		}
		if m.Name == "" {
			m.Name = target
		}
		if m.bundles() || m.HasShrinkwrap {
			return nil, fmt.Errorf("%s@%s ships its own dependencies (bundled or shrinkwrapped), which agentbox cannot pin", target, v)
		}
		return &m, nil
	}
	if latest, ok := doc.DistTags["latest"]; ok {
		if lv, err := ParseVersion(latest); err == nil && rng.Satisfies(lv) {
			if _, ok := doc.Versions[latest]; ok {
				return choose(latest)
			}
		}
	}
	var in []Version
	for v := range doc.Versions {
		if pv, err := ParseVersion(v); err == nil && pv.String() == v && rng.Satisfies(pv) {
			in = append(in, pv)
		}
	}
	if len(in) == 0 {
		return nil, &noVersionError{fmt.Sprintf("no version of %s satisfies %q (the registry has %d versions)", target, spec, len(doc.Versions))}
	}
	slices.SortFunc(in, func(a, b Version) int { return Compare(b, a) })
	for _, v := range in {
		if m := doc.Versions[v.String()]; !m.deprecated() {
			return choose(v.String())
		}
	}
	return choose(in[0].String())
}

// placedVersion parses the version of a placed package, which pick took
// from the versions that parse.
func placedVersion(s string) Version {
	v, _ := ParseVersion(s)
	return v
}

// tree records every placed package, marking those that only optional
// dependencies reach.
func (r *resolver) tree(name, version string) (*Tree, error) {
	required := map[string]bool{"": true}
	stack := []string{""}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range r.nodes[p].edges {
			if !e.optional && !required[e.to] {
				required[e.to] = true
				stack = append(stack, e.to)
			}
		}
	}
	t := &Tree{Name: name, Version: version, Packages: map[string]Entry{}, NodeEngines: map[string]string{}}
	for _, p := range slices.Sorted(maps.Keys(r.nodes)) {
		if p == "" {
			continue
		}
		n := r.nodes[p]
		e, err := entry(n)
		if err != nil {
			return nil, err
		}
		e.Optional = !required[p]
		t.Packages[p] = e
		if rng := n.m.NodeEngine(); rng != "" {
			t.NodeEngines[p] = rng
		}
	}
	t.Missing = slices.Sorted(slices.Values(r.missing))
	return t, t.Check()
}

func entry(n *node) (Entry, error) {
	m := n.m
	integrity, err := m.integrity()
	if err != nil {
		return Entry{}, err
	}
	bins, err := m.bins()
	if err != nil {
		return Entry{}, err
	}
	e := Entry{
		Version:              m.Version,
		Integrity:            integrity,
		HasInstallScript:     m.installScript(),
		Dependencies:         without(m.Dependencies, n.unfit),
		OptionalDependencies: without(m.OptionalDependencies, n.unfit),
		PeerDependencies:     nonEmpty(m.PeerDependencies),
		Bin:                  bins,
		OS:                   m.OS,
		CPU:                  m.CPU,
		Libc:                 m.Libc,
	}
	for k, meta := range m.PeerDependenciesMeta {
		if meta.Optional && m.PeerDependencies[k] != "" {
			e.OptionalPeers = append(e.OptionalPeers, k)
		}
	}
	slices.Sort(e.OptionalPeers)
	if key := n.path[strings.LastIndex(n.path, "node_modules/")+len("node_modules/"):]; key != n.name {
		e.Name = n.name
	}
	return e, nil
}

func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// without returns m less the keys in drop, nil when nothing is left.
func without(m map[string]string, drop map[string]bool) map[string]string {
	if len(drop) == 0 {
		return nonEmpty(m)
	}
	out := map[string]string{}
	for k, v := range m {
		if !drop[k] {
			out[k] = v
		}
	}
	return nonEmpty(out)
}

// ID is the package and version of the tree's entry at path,
// "name@1.2.3": its real name where the path names an alias.
func (e Entry) ID(path string) string {
	name := e.Name
	if name == "" {
		name = path[strings.LastIndex(path, "node_modules/")+len("node_modules/"):]
	}
	return name + "@" + e.Version
}
