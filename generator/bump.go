package generator

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentbox-dev/agentbox/images"
)

// BumpOptions are the collaborators of Bump.
type BumpOptions struct {
	Resolver images.Resolver
	NPM      images.NPM
	// Progress, if set, hears of each image reference as it resolves.
	Progress func(ref images.Ref, digest string, err error)
}

// ImageChange is one image reference of a bump.
type ImageChange struct {
	Reference string `json:"reference"`
	Old       string `json:"old"` // "" when it was not pinned
	New       string `json:"new"`
	Changed   bool   `json:"changed"`
	InConfig  bool   `json:"pinned_in_config,omitempty"` // pinned in agentbox.yaml: checked, never rewritten
}

// PackageChange is one npm package of a bump.
type PackageChange struct {
	Package string `json:"package"`
	Old     string `json:"old"`
	New     string `json:"new"`
	Changed bool   `json:"changed"`
}

// BumpResult is what a bump resolved, and the files it would write.
type BumpResult struct {
	Changed  bool            `json:"changed"`
	Images   []ImageChange   `json:"images"`
	Packages []PackageChange `json:"packages"`
	lock     []byte
	files    map[string][]byte
}

// Bump resolves every image reference of dir/agentbox.yaml to its current
// digest and the agent CLI to its latest version, and renders the sandbox
// with the new lock. It writes nothing: WriteBump does, once everything has
// resolved and rendered. A reference pinned in agentbox.yaml is checked to
// exist and left as written.
func Bump(ctx context.Context, dir string, o BumpOptions) (*BumpResult, error) {
	loaded, err := Compile(dir, CompileOptions{Until: Loaded, CheckMounts: true})
	if err != nil {
		return nil, err
	}
	cfg := loaded.Config
	old, err := readLock(dir)
	if err != nil {
		return nil, err
	}
	var refs []images.Ref
	for _, s := range imageSpecs(cfg) {
		if !slices.Contains(refs, s.Ref) {
			refs = append(refs, s.Ref)
		}
	}
	type answer struct {
		version string
		err     error
	}
	npm := make(chan answer, 1)
	if pkg := cfg.Agent.Package; pkg != "" {
		go func() {
			v, err := o.NPM.Latest(ctx, pkg)
			npm <- answer{v, err}
		}()
	}
	digests, errs := images.ResolveAll(ctx, o.Resolver, refs, o.Progress)
	res := &BumpResult{}
	lock := &images.Lock{Images: map[string]string{}, NPM: map[string]string{}}
	if pkg := cfg.Agent.Package; pkg != "" {
		a := <-npm
		if a.err != nil {
			errs = append(errs, a.err)
		} else {
			prev, _ := old.Version(pkg)
			lock.NPM[pkg] = a.version
			res.Packages = append(res.Packages, PackageChange{pkg, prev, a.version, prev != a.version})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := pinImages(refs, digests, old, lock, res); err != nil {
		return nil, err
	}
	res.lock = lock.Marshal()
	parsed, err := images.ParseLock(images.LockFile, res.lock)
	if err != nil {
		return nil, fmt.Errorf("internal error: the new lock does not parse: %w", err)
	}
	compiled, err := Compile(dir, CompileOptions{Config: cfg, Lock: parsed})
	if err != nil {
		return nil, err
	}
	res.files = compiled.Files
	for _, c := range res.Images {
		res.Changed = res.Changed || c.Changed
	}
	for _, c := range res.Packages {
		res.Changed = res.Changed || c.Changed
	}
	return res, nil
}

// pinImages records in lock and res the digest each reference resolved to;
// one pinned in agentbox.yaml must have resolved to its own digest.
func pinImages(refs []images.Ref, digests map[string]string, old, lock *images.Lock, res *BumpResult) error {
	for _, r := range refs {
		d := digests[r.String()]
		if r.Pinned() {
			if d != r.Digest {
				return fmt.Errorf("resolving %s: the registry returned %s", r, d)
			}
			res.Images = append(res.Images, ImageChange{Reference: r.Tagged(), Old: d, New: d, InConfig: true})
			continue
		}
		prev, _ := old.Digest(r)
		lock.Images[r.Tagged()] = d
		res.Images = append(res.Images, ImageChange{Reference: r.Tagged(), Old: prev, New: d, Changed: prev != d})
	}
	return nil
}

// WriteBump writes the new lock and the generated files, only those that
// changed, and removes stale files, all in one transaction: on any failure
// no file has changed.
func WriteBump(dir string, res *BumpResult) ([]Change, error) {
	return writeAll(dir, res.lock, res.files, nil)
}
