package bump

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// ClosureRow names the dependency closure in a bump's Debian changes.
const ClosureRow = "(dependencies)"

// bumpDebian finds each image's Debian release, resolves the packages it
// installs in the archive's latest snapshot, for every architecture, and
// keeps the old lock's snapshot when nothing it pins changed.
func bumpDebian(ctx context.Context, cfg *config.Config, old *lockfile.Lock, o Options, specs []config.ImageSpec, res *Result) (*lockfile.Debian, error) {
	agent, node, egress := generator.DebianNames(cfg)
	names := [][]string{append(agent, node...), egress}
	d := &lockfile.Debian{Releases: map[string]string{}, Pins: map[string]map[string]lockfile.ArchPins{}}
	want := map[string][]string{}
	done := o.step("Debian: reading the images' os-release")
	for i, s := range specs {
		rel, err := o.OS.OSRelease(ctx, s.Ref, s.Ref.Digest)
		if err != nil {
			done("", err)
			return nil, fmt.Errorf("%s: %w", s.What, err)
		}
		if rel.ID != "debian" || !lockfile.ValidCodename(rel.VersionCodename) {
			done("", errors.New("not Debian"))
			return nil, fmt.Errorf("%s is not Debian (its os-release says ID=%q VERSION_CODENAME=%q): agentbox pins packages from Debian's snapshot archive, so its images must be Debian-based", s.What, rel.ID, rel.VersionCodename)
		}
		d.Releases[s.Ref.Tagged()] = rel.VersionCodename
		want[rel.VersionCodename] = slices.Compact(slices.Sorted(slices.Values(append(want[rel.VersionCodename], names[i]...))))
	}
	done(fmt.Sprintf("Debian: the images run %s", strings.Join(sortedKeys(want), ", ")), nil)
	done = o.step("Debian: finding the archive's latest snapshot")
	snap, err := o.Debian.Snapshot(ctx, o.Now())
	done("Debian: snapshot "+snap.Debian, err)
	if err != nil {
		return nil, fmt.Errorf("reading Debian's snapshot archive: %w", err)
	}
	if err := resolveDebian(ctx, o, snap, want, d); err != nil {
		return nil, err
	}
	d.Snapshot, d.SecuritySnapshot = snap.Debian, snap.Security
	if old != nil && old.Debian != nil && samePins(old.Debian, d) {
		d.Snapshot, d.SecuritySnapshot = old.Debian.Snapshot, old.Debian.SecuritySnapshot
	}
	res.Snapshot = d.Snapshot
	res.Debian = debianChanges(old, d)
	return d, nil
}

// resolveDebian resolves every release on every architecture at once.
func resolveDebian(ctx context.Context, o Options, snap debian.Snapshot, want map[string][]string, d *lockfile.Debian) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for rel, names := range want {
		d.Pins[rel] = map[string]lockfile.ArchPins{}
		for _, arch := range lockfile.Architectures {
			wg.Add(1)
			go func() {
				defer wg.Done()
				done := o.step(fmt.Sprintf("Debian %s/%s: resolving %d packages and their dependencies", rel, arch, len(names)))
				r, err := o.Debian.Resolve(ctx, snap, rel, arch, names)
				if err == nil {
					done(fmt.Sprintf("Debian %s/%s: %d packages and their dependencies pinned", rel, arch, len(r.Versions)), nil)
				} else {
					done("", err)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("Debian %s (%s): %w", rel, arch, err))
					return
				}
				d.Pins[rel][arch] = lockfile.ArchPins{Closure: r.Closure, Versions: r.Versions}
			}()
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// samePins reports whether two locks pin the same releases and versions.
func samePins(a, b *lockfile.Debian) bool {
	if !maps.Equal(a.Releases, b.Releases) || len(a.Pins) != len(b.Pins) {
		return false
	}
	for rel, arches := range b.Pins {
		if len(a.Pins[rel]) != len(arches) {
			return false
		}
		for arch, p := range arches {
			q, ok := a.Pins[rel][arch]
			if !ok || q.Closure != p.Closure || !maps.Equal(q.Versions, p.Versions) {
				return false
			}
		}
	}
	return true
}

// debianChanges lists every pinned package, old and new, and each closure.
func debianChanges(old *lockfile.Lock, d *lockfile.Debian) []DebianChange {
	var prev map[string]map[string]lockfile.ArchPins
	if old != nil && old.Debian != nil {
		prev = old.Debian.Pins
	}
	var out []DebianChange
	for _, rel := range sortedKeys(joinKeys(prev, d.Pins)) {
		for _, arch := range sortedKeys(joinKeys(prev[rel], d.Pins[rel])) {
			a, b := prev[rel][arch], d.Pins[rel][arch]
			for _, name := range sortedKeys(joinKeys(a.Versions, b.Versions)) {
				out = append(out, DebianChange{rel, arch, name, a.Versions[name], b.Versions[name], a.Versions[name] != b.Versions[name]})
			}
			out = append(out, DebianChange{rel, arch, ClosureRow, a.Closure, b.Closure, a.Closure != b.Closure})
		}
	}
	return out
}
