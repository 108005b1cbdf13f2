package images

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	"github.com/google/go-containerregistry/pkg/name"
)

// Ref is an image reference that keeps its tag beside its digest, as in
// "debian:bookworm-slim@sha256:...". go-containerregistry drops the tag of
// such a reference, so the two halves are split by hand.
type Ref struct {
	Repo   string // as written: "debian", "ghcr.io/o/r", "127.0.0.1:5000/x"
	Tag    string // always present
	Digest string // "sha256:<64 hex>", or "" when not pinned yet
}

var (
	refChars    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)
	digestRe    = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	maxRefBytes = 255
)

// ParseRef parses "repo:tag" or "repo:tag@sha256:<hex>". A tag is required:
// the tag is what a reviewer reads in a diff, the digest is what runs.
func ParseRef(s string) (Ref, error) {
	if s == "" {
		return Ref{}, fmt.Errorf("empty image reference")
	}
	if len(s) > maxRefBytes {
		return Ref{}, fmt.Errorf("image reference is longer than %d characters", maxRefBytes)
	}
	rest, digest, hasDigest := strings.Cut(s, "@")
	if hasDigest && !digestRe.MatchString(digest) {
		return Ref{}, fmt.Errorf("invalid digest %q in image reference %q: want sha256:<64 lowercase hex>", digest, s)
	}
	if !refChars.MatchString(rest) {
		return Ref{}, fmt.Errorf("invalid image reference %q", s)
	}
	slash := strings.LastIndexByte(rest, '/')
	colon := strings.LastIndexByte(rest, ':')
	if colon <= slash {
		hint := rest + ":<tag>"
		if hasDigest {
			hint += "@" + digest
		}
		return Ref{}, fmt.Errorf("image reference %q has no tag; write it as %q", s, hint)
	}
	// Docker's own grammar is stricter than go-containerregistry's (which
	// accepts a repository ending in "."): both must accept the reference.
	if _, err := reference.ParseNormalizedNamed(rest); err != nil {
		return Ref{}, fmt.Errorf("invalid image reference %q: %w", s, err)
	}
	tag, err := name.NewTag(rest, name.WeakValidation)
	if err != nil {
		return Ref{}, fmt.Errorf("invalid image reference %q: %w", s, err)
	}
	return Ref{Repo: rest[:colon], Tag: tag.TagStr(), Digest: digest}, nil
}

// String returns the reference as written in a Dockerfile: repo:tag, with
// @digest when pinned.
func (r Ref) String() string {
	if r.Digest == "" {
		return r.Repo + ":" + r.Tag
	}
	return r.Repo + ":" + r.Tag + "@" + r.Digest
}

// Tagged returns the reference without its digest.
func (r Ref) Tagged() string { return r.Repo + ":" + r.Tag }

// Key returns the canonical repo:tag used to match lock entries, so that
// "debian:x" and "docker.io/library/debian:x" are one image.
func (r Ref) Key() string {
	t, err := name.NewTag(r.Tagged(), name.WeakValidation)
	if err != nil {
		return r.Tagged()
	}
	return t.Context().Name() + ":" + t.TagStr()
}

// Pinned reports whether the reference carries a digest.
func (r Ref) Pinned() bool { return r.Digest != "" }

// WithDigest returns a copy of r pinned to digest.
func (r Ref) WithDigest(digest string) Ref {
	r.Digest = digest
	return r
}

// ValidDigest reports whether d is "sha256:" followed by 64 lowercase hex digits.
func ValidDigest(d string) bool { return digestRe.MatchString(d) }
