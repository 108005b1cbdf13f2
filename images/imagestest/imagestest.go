// Package imagestest holds map-backed fakes of the images package's
// collaborators (Resolver, NPM, OSReleaser) for tests. They never reach a
// network, and they fail loudly: a reference or package missing from the map
// is an error that names it and the keys the fake knows.
package imagestest

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/agentbox-dev/agentbox/images"
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

var _ images.NPM = NPM(nil)

// Latest implements images.NPM.
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
