package images

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/neterr"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// OSRelease is what an image's os-release file says it is.
type OSRelease struct {
	ID              string // ID=, "debian"; "linux" when the file has none, as os-release(5) says
	VersionCodename string // VERSION_CODENAME=, "bookworm"; "" when the file has none
}

// OSReleaser reads which operating system release an image is.
type OSReleaser interface {
	// OSRelease reads etc/os-release of ref at digest; for an index, of its
	// linux/amd64 image, else of its first linux image.
	OSRelease(ctx context.Context, ref Ref, digest string) (OSRelease, error)
}

var _ OSReleaser = (*RegistryResolver)(nil)

const (
	osReleasePath  = "etc/os-release"
	maxOSRelease   = 64 << 10
	maxSymlinks    = 8
	layerTimeScale = 4 // OSRelease downloads layers: it gets this many times the per-reference timeout
)

// contentError is a finding about the image's content, told as is.
type contentError string

func (e contentError) Error() string { return string(e) }

// OSRelease implements OSReleaser. It reads the layers top-down, follows
// symlinks (Debian's etc/os-release points to usr/lib/os-release) through
// the merged filesystem, honours whiteouts and opaque directories, and stops
// at the layer that holds the file.
func (r *RegistryResolver) OSRelease(ctx context.Context, ref Ref, digest string) (OSRelease, error) {
	if !ValidDigest(digest) {
		return OSRelease{}, fmt.Errorf("reading the os-release of %q: invalid digest %q: want sha256:<64 lowercase hex>", ref.String(), digest)
	}
	pinned := ref.WithDigest(digest)
	nref, err := nameRef(pinned)
	if err != nil {
		return OSRelease{}, fmt.Errorf("reading the os-release of %q: %w", pinned.String(), err)
	}
	host := nref.Context().RegistryStr()
	fail := func(msg string, err error) error {
		return &neterr.DescribedError{Msg: fmt.Sprintf("reading the os-release of %q on %s: %s", pinned.String(), host, msg), Err: err}
	}
	if r.err != nil {
		return OSRelease{}, fail(neterr.OneLine(r.err.Error()), r.err)
	}
	timeout := layerTimeScale * r.timeout
	var body []byte
	describe := func(at name.Reference, err error) string {
		var ce contentError
		switch {
		case errors.As(err, &ce):
			return ce.Error()
		case neterr.ContextError(ctx, err, timeout) != "":
			return neterr.ContextError(ctx, err, timeout)
		}
		return r.describe(ctx, pinned, at, err)
	}
	err, note := r.viaMirrors(ctx, nref, timeout, func(ctx context.Context, at name.Reference) error {
		img, err := r.linuxImage(ctx, at)
		if err == nil {
			body, err = readFile(img, osReleasePath)
		}
		return err
	}, describe)
	if err != nil {
		return OSRelease{}, fail(describe(nref, err)+note, err)
	}
	return parseOSRelease(body), nil
}

// linuxImage fetches the image ref names; for an index, its linux/amd64
// image, else its first linux image.
func (r *RegistryResolver) linuxImage(ctx context.Context, ref name.Reference) (v1.Image, error) {
	desc, err := r.puller.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !desc.MediaType.IsIndex() {
		return desc.Image()
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var pick *v1.Descriptor
	for i, m := range im.Manifests {
		if m.Platform == nil || m.Platform.OS != "linux" || !m.MediaType.IsImage() {
			continue
		}
		if m.Platform.Architecture == "amd64" {
			pick = &im.Manifests[i]
			break
		}
		if pick == nil {
			pick = &im.Manifests[i]
		}
	}
	if pick == nil {
		return nil, contentError("no linux image in the index")
	}
	return idx.Image(pick.Digest)
}

// readFile reads the file at p (relative to the root) from img's merged
// filesystem, following at most maxSymlinks symlinks.
func readFile(img v1.Image, p string) ([]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	want := p
	for range maxSymlinks + 1 {
		f, err := lookup(layers, want)
		switch {
		case err != nil:
			return nil, err
		case f.body != nil:
			return f.body, nil
		case f.link == "":
			if want != p {
				return nil, contentError(fmt.Sprintf("no %s in the image (it links to %s, which is missing)", p, want))
			}
			return nil, contentError(fmt.Sprintf("no %s in the image", p))
		}
		want = f.link
	}
	return nil, contentError(fmt.Sprintf("%s: too many symlinks (more than %d)", p, maxSymlinks))
}

// found is what a lookup found: the file's content, or the path a symlink
// on the way leads to; neither when the file does not exist.
type found struct {
	body []byte
	link string
}

// lookup finds p in layers, the top one first.
func lookup(layers []v1.Layer, p string) (found, error) {
	for i := len(layers) - 1; i >= 0; i-- {
		f, hidden, err := scanLayer(layers[i], p)
		if err != nil || f.body != nil || f.link != "" || hidden {
			return f, err
		}
	}
	return found{}, nil
}

// scanLayer looks for p in one layer. hidden reports that the layer deletes
// p from the layers below it: a whiteout of p or of a parent, an opaque
// parent, or a parent that is not a directory.
func scanLayer(l v1.Layer, p string) (f found, hidden bool, err error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return found{}, false, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return found{}, hidden, nil
		}
		if err != nil {
			return found{}, false, fmt.Errorf("reading a layer: %w", err)
		}
		name := cleanPath(h.Name)
		switch {
		case name == p:
			f, err := entryAt(tr, h, p)
			return f, false, err
		case under(p, name) && h.Typeflag == tar.TypeSymlink:
			return found{link: linkTarget(name, h.Linkname) + p[len(name):]}, false, nil
		case under(p, name) && h.Typeflag != tar.TypeDir:
			hidden = true
		case whitesOut(name, p):
			hidden = true
		}
	}
}

// entryAt reads the tar entry h found at p.
func entryAt(tr *tar.Reader, h *tar.Header, p string) (found, error) {
	switch h.Typeflag {
	case tar.TypeSymlink:
		return found{link: linkTarget(p, h.Linkname)}, nil
	case tar.TypeLink:
		return found{link: cleanPath(h.Linkname)}, nil
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archives still use TypeRegA
	default:
		return found{}, contentError(fmt.Sprintf("%s is not a regular file", p))
	}
	if h.Size > maxOSRelease {
		return found{}, contentError(fmt.Sprintf("%s is larger than 64 KiB (%d bytes)", p, h.Size))
	}
	b, err := io.ReadAll(io.LimitReader(tr, maxOSRelease))
	if err != nil {
		return found{}, fmt.Errorf("reading %s: %w", p, err)
	}
	if b == nil {
		b = []byte{}
	}
	return found{body: b}, nil
}

// whitesOut reports whether the entry name is a whiteout that deletes p
// from the layers below: ".wh.X" for p or a parent of p, or an opaque
// marker ".wh..wh..opq" in a parent of p.
func whitesOut(name, p string) bool {
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if base == ".wh..wh..opq" {
		return dir == "" || under(p, dir)
	}
	victim, ok := strings.CutPrefix(base, ".wh.")
	if !ok {
		return false
	}
	victim = path.Join(dir, victim)
	return victim == p || under(p, victim)
}

// under reports whether p lies below the directory dir.
func under(p, dir string) bool { return strings.HasPrefix(p, dir+"/") }

// cleanPath turns an archive name ("./etc/", "/etc") into "etc"; the root
// is "".
func cleanPath(s string) string { return strings.TrimPrefix(path.Clean("/"+s), "/") }

// linkTarget resolves a symlink at link pointing to target, within the root.
func linkTarget(link, target string) string {
	if strings.HasPrefix(target, "/") {
		return cleanPath(target)
	}
	return cleanPath(path.Join(path.Dir(link), target))
}

// parseOSRelease reads ID= and VERSION_CODENAME= from an os-release file:
// KEY=VALUE lines, values optionally in single or double quotes, with
// backslash escapes in double quotes (os-release(5)).
func parseOSRelease(b []byte) OSRelease {
	var o OSRelease
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch k {
		case "ID":
			o.ID = unquote(v)
		case "VERSION_CODENAME":
			o.VersionCodename = unquote(v)
		}
	}
	if o.ID == "" {
		o.ID = "linux"
	}
	return o
}

func unquote(v string) string {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return v[1 : len(v)-1]
	}
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	v = v[1 : len(v)-1]
	var sb strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("\"\\$`", v[i+1]) >= 0 {
			i++
		}
		sb.WriteByte(v[i])
	}
	return sb.String()
}
