package bump

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// DebianArchive reads a snapshot archive of Debian (internal/debian.Archive).
type DebianArchive interface {
	Snapshot(ctx context.Context, at time.Time) (debian.Snapshot, error)
	Resolve(ctx context.Context, snap debian.Snapshot, release, arch string, names []string) (debian.Resolution, error)
}

// Options are the collaborators of Run.
type Options struct {
	Resolver images.Resolver
	OS       images.OSReleaser
	NPM      npm.Source
	Debian   DebianArchive
	Now      func() time.Time // nil: time.Now
	// Progress, if set, hears of each image reference as it resolves.
	Progress func(ref images.Ref, digest string, err error)
	// Step, if set, hears that a long step of the bump starts (the npm
	// tree, Debian's releases, snapshot and packages); the function it
	// returns hears that the step ended: what it found, or its error.
	Step func(what string) (done func(found string, err error))
	// AcceptChangedTarball names the npm packages (NAME@VERSION) whose
	// tarball may have changed under the version the lock pins; any other
	// such change fails the bump (ChangedTarballError).
	AcceptChangedTarball []string
}

// step tells o.Step that a step starts, and returns the function that
// tells it that the step ended.
func (o Options) step(what string) func(found string, err error) {
	if o.Step == nil {
		return func(string, error) {}
	}
	return o.Step(what)
}

// ImageChange is one image reference of a bump.
type ImageChange struct {
	Reference string `json:"reference"`
	Old       string `json:"old"` // "" when it was not pinned
	New       string `json:"new"`
	Changed   bool   `json:"changed"`
	InConfig  bool   `json:"pinned_in_config,omitempty"` // pinned in agentbox.yaml: checked, never rewritten
}

// PackageChange is one npm package of a bump, with its dependency tree.
type PackageChange struct {
	Package     string `json:"package"`
	Old         string `json:"old"`
	New         string `json:"new"`
	Changed     bool   `json:"changed"`
	TreeSize    int    `json:"tree_size"`    // packages in the new tree, the CLI included
	TreeChanged int    `json:"tree_changed"` // packages added, removed or at another version
}

// DebianChange is one Debian package of one release and architecture.
type DebianChange struct {
	Release string `json:"release"`
	Arch    string `json:"arch"`
	Package string `json:"package"` // "(dependencies)": the closure of what the named packages need
	Old     string `json:"old"`
	New     string `json:"new"`
	Changed bool   `json:"changed"`
}

// Result is what a bump resolved, and the files it would write.
type Result struct {
	Changed  bool            `json:"changed"`
	Images   []ImageChange   `json:"images"`
	Packages []PackageChange `json:"packages"`
	Debian   []DebianChange  `json:"debian"`
	Snapshot string          `json:"debian_snapshot"` // the snapshot the new lock pins
	// Warnings are what bump pins but doubts: a dependency whose
	// engines.node the image's Node does not meet, an optional dependency
	// the registry does not have.
	Warnings []string `json:"warnings,omitempty"`
	lock     []byte
	files    map[string][]byte
}

// Run resolves every image reference of dir/agentbox.yaml to its current
// digest, the agent CLI to its latest version and its whole dependency
// tree, and every Debian package of both images to its version in the
// archive's latest snapshot, and renders the sandbox with the new lock. It
// writes nothing: Write does, once everything has resolved and
// rendered. A reference pinned in agentbox.yaml is checked to exist and left
// as written. Debian pins keep their snapshot while no version changed.
func Run(ctx context.Context, dir string, o Options) (*Result, error) {
	loaded, err := generator.Compile(dir, generator.CompileOptions{Until: generator.Loaded, CheckMounts: true})
	if err != nil {
		return nil, err
	}
	cfg := loaded.Config
	old, err := lockfile.Read(dir)
	if err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	res := &Result{}
	lock, err := resolve(ctx, cfg, old, o, res)
	if err != nil {
		return nil, err
	}
	if err := res.render(dir, cfg, old, lock); err != nil {
		return nil, err
	}
	return res, nil
}

// resolve resolves the images and the agent CLI's tree at once, then the
// Debian packages of the images found, into a new lock and res.
func resolve(ctx context.Context, cfg *config.Config, old *lockfile.Lock, o Options, res *Result) (*lockfile.Lock, error) {
	var tree *npm.Tree
	var npmErr error
	var wg sync.WaitGroup
	if pkg := cfg.Agent.Package; pkg != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := o.step("npm: resolving " + pkg + " and its dependency tree")
			tree, npmErr = resolveCLI(ctx, o.NPM, pkg)
			if npmErr != nil {
				done("", npmErr)
				return
			}
			done(fmt.Sprintf("npm: %s@%s, a tree of %d packages", tree.Name, tree.Version, len(tree.Packages)), nil)
		}()
	}
	lock := &lockfile.Lock{Images: map[string]string{}, NPM: map[string]*npm.Tree{}}
	pinned, err := bumpImages(ctx, cfg, old, o, lock, res)
	wg.Wait()
	if err = errors.Join(err, npmErr); err != nil {
		return nil, err
	}
	if tree != nil {
		if err := checkTarballs(old, tree, o.AcceptChangedTarball, res); err != nil {
			return nil, err
		}
		lock.NPM[tree.Name] = tree
		res.Packages = append(res.Packages, treeChange(old, tree))
	}
	if lock.Debian, err = bumpDebian(ctx, cfg, old, o, pinned, res); err != nil {
		return nil, err
	}
	if tree != nil {
		warnings, err := checkNode(pinned[0], lock.Debian, tree)
		if err != nil {
			return nil, err
		}
		res.Warnings = append(res.Warnings, warnings...)
		for _, m := range tree.Missing {
			res.Warnings = append(res.Warnings, "npm package "+m+"; left out of the lock, as npm leaves it out")
		}
	}
	return lock, nil
}

// render renders the sandbox with the new lock into res, and says whether
// anything changed since old.
func (res *Result) render(dir string, cfg *config.Config, old, lock *lockfile.Lock) error {
	res.lock = lock.Marshal()
	parsed, err := lockfile.Parse(lockfile.File, res.lock)
	if err != nil {
		return fmt.Errorf("internal error: the new lock does not parse: %w", err)
	}
	compiled, err := generator.Compile(dir, generator.CompileOptions{Config: cfg, Lock: parsed})
	if err != nil {
		return err
	}
	res.files = compiled.Files
	res.Changed = old == nil || old.FormatVersion != lockfile.Version
	for _, c := range res.Images {
		res.Changed = res.Changed || c.Changed
	}
	for _, c := range res.Packages {
		res.Changed = res.Changed || c.Changed || c.TreeChanged > 0
	}
	for _, c := range res.Debian {
		res.Changed = res.Changed || c.Changed
	}
	return nil
}

// Write writes the new lock and the generated files, only those that
// changed, and removes stale files, all in one transaction: on any failure
// no file has changed.
func Write(dir string, res *Result) ([]generator.Change, error) {
	return generator.WriteLock(dir, res.lock, res.files)
}

// bumpImages resolves the image references into lock and res, and returns
// every image spec with its digest.
func bumpImages(ctx context.Context, cfg *config.Config, old *lockfile.Lock, o Options, lock *lockfile.Lock, res *Result) ([]config.ImageSpec, error) {
	specs := cfg.ImageSpecs()
	var refs []images.Ref
	for _, s := range specs {
		if !slices.Contains(refs, s.Ref) {
			refs = append(refs, s.Ref)
		}
	}
	digests, errs := images.ResolveAll(ctx, o.Resolver, refs, o.Progress)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, r := range refs {
		d := digests[r.String()]
		if r.Pinned() {
			if d != r.Digest {
				return nil, fmt.Errorf("resolving %s: the registry returned %s", r, d)
			}
			res.Images = append(res.Images, ImageChange{Reference: r.Tagged(), Old: d, New: d, InConfig: true})
			continue
		}
		prev, _ := old.Digest(r)
		lock.Images[r.Tagged()] = d
		res.Images = append(res.Images, ImageChange{Reference: r.Tagged(), Old: prev, New: d, Changed: prev != d})
	}
	for i := range specs {
		specs[i].Ref = specs[i].Ref.WithDigest(digests[specs[i].Ref.String()])
	}
	return specs, nil
}

// resolveCLI resolves the CLI's latest version and its dependency tree.
func resolveCLI(ctx context.Context, reg npm.Source, pkg string) (*npm.Tree, error) {
	v, err := reg.Latest(ctx, pkg)
	if err != nil {
		return nil, err
	}
	t, err := npm.Resolve(ctx, reg, pkg, v, npm.ImagePlatform)
	if err != nil {
		return nil, fmt.Errorf("resolving the dependency tree of %s@%s: %w", pkg, v, err)
	}
	return t, nil
}

func treeChange(old *lockfile.Lock, t *npm.Tree) PackageChange {
	c := PackageChange{Package: t.Name, New: t.Version, TreeSize: len(t.Packages)}
	c.Old, _ = old.Version(t.Name)
	c.Changed = c.Old != c.New
	prev, _ := old.Tree(t.Name)
	var before map[string]npm.Entry
	if prev != nil {
		before = prev.Packages
	}
	for p := range joinKeys(before, t.Packages) {
		a, inOld := before[p]
		b, inNew := t.Packages[p]
		if inOld != inNew || !bytes.Equal(entryBytes(a), entryBytes(b)) {
			c.TreeChanged++
		}
	}
	return c
}

func entryBytes(e npm.Entry) []byte {
	t := &npm.Tree{Packages: map[string]npm.Entry{"x": e}}
	return t.PackageLock("")
}

func joinKeys[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
