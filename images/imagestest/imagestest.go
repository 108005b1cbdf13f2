// Package imagestest holds map-backed fakes of bump's collaborators for
// tests: the image registry (images.Resolver, images.OSReleaser), the npm
// registry (npm.Source) and Debian's snapshot archive. They never reach a
// network, and they fail loudly: a reference or package missing from the map
// is an error that names it and the keys the fake knows.
package imagestest

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/internal/npm"
)

// Resolver resolves image references from a map of Ref.Key() ("repo:tag",
// normalized) to digest. A reference pinned with a digest resolves to its
// own digest when the map holds that digest for its key, and fails
// otherwise, as a registry that lacks it would.
type Resolver map[string]string

var _ images.Resolver = Resolver(nil)

// Resolve implements images.Resolver.
func (r Resolver) Resolve(ctx context.Context, ref images.Ref) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	d, ok := r[ref.Key()]
	if !ok {
		return "", fmt.Errorf("imagestest.Resolver: unknown reference %q (key %q); known keys are %q", ref, ref.Key(), slices.Sorted(maps.Keys(r)))
	}
	if ref.Pinned() && ref.Digest != d {
		return "", fmt.Errorf("imagestest.Resolver: reference %q pins %s, but the fake has %s", ref, ref.Digest, d)
	}
	return d, nil
}

// NPM answers each package's "latest" version from a map of package name to
// version.
type NPM map[string]string

var _ npm.Source = NPM(nil)

// Latest implements npm.Source.
func (n NPM) Latest(ctx context.Context, pkg string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	v, ok := n[pkg]
	if !ok {
		return "", fmt.Errorf("imagestest.NPM: unknown package %q; known packages are %q", pkg, slices.Sorted(maps.Keys(n)))
	}
	return v, nil
}

// OSReleases answers each pinned image's os-release from a map keyed by
// Ref.Key() + "@" + digest ("index.docker.io/library/debian:bookworm-slim@sha256:...").
type OSReleases map[string]images.OSRelease

var _ images.OSReleaser = OSReleases(nil)

// OSRelease implements images.OSReleaser.
func (o OSReleases) OSRelease(ctx context.Context, ref images.Ref, digest string) (images.OSRelease, error) {
	if err := ctx.Err(); err != nil {
		return images.OSRelease{}, err
	}
	key := ref.Key() + "@" + digest
	r, ok := o[key]
	if !ok {
		return images.OSRelease{}, fmt.Errorf("imagestest.OSReleases: unknown image %q (key %q); known keys are %q", ref.WithDigest(digest), key, slices.Sorted(maps.Keys(o)))
	}
	return r, nil
}

// Packument implements npm.Registry: the package at its one version, with an
// executable named after it, no dependencies, and an integrity made from
// its name and version.
func (n NPM) Packument(ctx context.Context, pkg string) (*npm.Packument, error) {
	v, err := n.Latest(ctx, pkg)
	if err != nil {
		return nil, err
	}
	sum := sha512.Sum512([]byte(pkg + "@" + v))
	m := npm.Manifest{Name: pkg, Version: v, Bin: json.RawMessage(`"cli.js"`),
		Dist: npm.Dist{Integrity: "sha512-" + base64.StdEncoding.EncodeToString(sum[:])}}
	return &npm.Packument{Name: pkg, DistTags: map[string]string{"latest": v}, Versions: map[string]npm.Manifest{v: m}}, nil
}

// Debian is a snapshot archive that has one version of each package in
// Versions, on every release and architecture, at the snapshot State;
// every package depends on all of Deps.
type Debian struct {
	State    debian.Snapshot
	Versions map[string]string
	Deps     map[string]string
}

// Snapshot implements bump.DebianArchive.
func (d *Debian) Snapshot(ctx context.Context, at time.Time) (debian.Snapshot, error) {
	return d.State, ctx.Err()
}

// Resolve implements bump.DebianArchive: the closure is the named
// packages and Deps.
func (d *Debian) Resolve(ctx context.Context, snap debian.Snapshot, release, arch string, names []string) (debian.Resolution, error) {
	if snap != d.State {
		return debian.Resolution{}, fmt.Errorf("imagestest.Debian: snapshot %v, the archive has %v", snap, d.State)
	}
	r := debian.Resolution{Versions: map[string]string{}}
	var lines []string
	for _, n := range names {
		name, pinned, _ := strings.Cut(n, "=")
		v, ok := d.Versions[name]
		if !ok || pinned != "" && pinned != v {
			return debian.Resolution{}, fmt.Errorf("imagestest.Debian: no package %q; known packages are %q", n, slices.Sorted(maps.Keys(d.Versions)))
		}
		r.Versions[name] = v
		lines = append(lines, name+"="+v+"\n")
	}
	for name, v := range d.Deps {
		lines = append(lines, name+"="+v+"\n")
	}
	slices.Sort(lines)
	r.Closure = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(strings.Join(lines, ""))))
	r.ClosureSize = len(lines)
	return r, ctx.Err()
}
