package images

import (
	"archive/tar"
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is one file of a test layer: a regular file (body), a symlink
// (link), or a directory (dir).
type entry struct {
	name, body, link string
	dir              bool
}

func file(name, body string) entry  { return entry{name: name, body: body} }
func symlink(name, to string) entry { return entry{name: name, link: to} }
func dir(name string) entry         { return entry{name: name, dir: true} }

func layer(t *testing.T, entries ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		switch {
		case e.dir:
			h = &tar.Header{Name: e.name + "/", Mode: 0o755, Typeflag: tar.TypeDir}
		case e.link != "":
			h = &tar.Header{Name: e.name, Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: e.link}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// imageOf is a linux image of the given layers, bottom first.
func imageOf(t *testing.T, arch string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

const (
	bookworm = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\n" +
		"VERSION=\"12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\nHOME_URL=\"https://www.example.test/\"\n"
	trixieFile = "# a comment\nID='debian'\nVERSION_CODENAME=\"trixie\"\n"
)

func osRelease(t *testing.T, f *fixture, ref, digest string) (OSRelease, error) {
	t.Helper()
	return f.resolver(RegistryOptions{Attempts: 1}).OSRelease(context.Background(), mustRef(t, ref), digest)
}

// osCase is an image of layers (bottom first) and what OSRelease finds.
type osCase struct {
	name   string
	layers func(t *testing.T) []v1.Layer
	want   OSRelease
	err    string // a part of the error; "" for none
}

var (
	bookwormRelease = OSRelease{ID: "debian", VersionCodename: "bookworm"}
	trixie          = OSRelease{ID: "debian", VersionCodename: "trixie"}
)

// debianBase is a layer with Debian's os-release: a file in usr/lib and a
// relative symlink to it in etc.
func debianBase(t *testing.T) v1.Layer {
	return layer(t, dir("etc"), dir("usr"), dir("usr/lib"),
		file("usr/lib/os-release", bookworm), symlink("etc/os-release", "../usr/lib/os-release"))
}

func runOSCases(t *testing.T, tests []osCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			img := imageOf(t, "amd64", tt.layers(t)...)
			f.write("ghcr.io/o/base:1", img)
			d := digestOf(t, img)
			got, err := osRelease(t, f, "ghcr.io/o/base:1", d)
			if tt.err != "" {
				checkErr(t, err, "ghcr.io/o/base:1@"+d, "ghcr.io", tt.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("OSRelease = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestOSReleaseLayers(t *testing.T) {
	runOSCases(t, []osCase{
		{"plain file", func(t *testing.T) []v1.Layer {
			return []v1.Layer{layer(t, dir("etc"), file("etc/os-release", trixieFile))}
		}, trixie, ""},
		{"file with ./ names", func(t *testing.T) []v1.Layer {
			return []v1.Layer{layer(t, dir("./etc"), file("./etc/os-release", trixieFile))}
		}, trixie, ""},
		{"debian's relative symlink", func(t *testing.T) []v1.Layer {
			return []v1.Layer{debianBase(t), layer(t, dir("app"), file("app/x", "y"))}
		}, bookwormRelease, ""},
		{"absolute symlink", func(t *testing.T) []v1.Layer {
			return []v1.Layer{layer(t, file("usr/lib/os-release", bookworm), symlink("etc/os-release", "/usr/lib/os-release"))}
		}, bookwormRelease, ""},
		{"symlink target in a lower layer", func(t *testing.T) []v1.Layer {
			return []v1.Layer{layer(t, file("usr/lib/os-release", bookworm)), layer(t, symlink("etc/os-release", "../usr/lib/os-release"))}
		}, bookwormRelease, ""},
		{"upper layer replaces the file", func(t *testing.T) []v1.Layer {
			return []v1.Layer{debianBase(t), layer(t, file("etc/os-release", trixieFile))}
		}, trixie, ""},
		{"upper layer replaces the target", func(t *testing.T) []v1.Layer {
			return []v1.Layer{debianBase(t), layer(t, file("usr/lib/os-release", trixieFile))}
		}, trixie, ""},
	})
}

func TestOSReleaseWhiteouts(t *testing.T) {
	runOSCases(t, []osCase{
		{"whiteout of the link", func(t *testing.T) []v1.Layer {
			return []v1.Layer{debianBase(t), layer(t, file("etc/.wh.os-release", ""))}
		}, OSRelease{}, "no etc/os-release"},
		{"whiteout of the target", func(t *testing.T) []v1.Layer {
			return []v1.Layer{debianBase(t), layer(t, file("usr/lib/.wh.os-release", ""))}
		}, OSRelease{}, "no etc/os-release"},
		{"whiteout of a parent directory", func(t *testing.T) []v1.Layer {
			return []v1.Layer{debianBase(t), layer(t, file(".wh.etc", ""))}
		}, OSRelease{}, "no etc/os-release"},
		{"opaque directory", func(t *testing.T) []v1.Layer {
			return []v1.Layer{debianBase(t), layer(t, dir("usr/lib"), file("usr/lib/.wh..wh..opq", ""))}
		}, OSRelease{}, "no etc/os-release"},
		{"opaque directory with a new file", func(t *testing.T) []v1.Layer {
			return []v1.Layer{debianBase(t), layer(t, file("etc/os-release", trixieFile), file("etc/.wh..wh..opq", ""))}
		}, trixie, ""},
		{"whiteout below the file is ignored", func(t *testing.T) []v1.Layer {
			return []v1.Layer{layer(t, file("etc/.wh.os-release", "")), layer(t, file("etc/os-release", trixieFile))}
		}, trixie, ""},
	})
}

func TestOSReleaseBadFiles(t *testing.T) {
	runOSCases(t, []osCase{
		{"missing", func(t *testing.T) []v1.Layer {
			return []v1.Layer{layer(t, dir("etc"), file("etc/hostname", "x"))}
		}, OSRelease{}, "no etc/os-release"},
		{"dangling symlink", func(t *testing.T) []v1.Layer {
			return []v1.Layer{layer(t, symlink("etc/os-release", "../usr/lib/os-release"))}
		}, OSRelease{}, "no etc/os-release in the image (it links to usr/lib/os-release, which is missing)"},
		{"symlink loop", func(t *testing.T) []v1.Layer {
			return []v1.Layer{layer(t, symlink("etc/os-release", "os-release2"), symlink("etc/os-release2", "os-release"))}
		}, OSRelease{}, "too many symlinks"},
		{"oversize", func(t *testing.T) []v1.Layer {
			return []v1.Layer{layer(t, file("etc/os-release", "ID=debian\n"+strings.Repeat("#\n", 40<<10)))}
		}, OSRelease{}, "larger than 64 KiB"},
		{"a directory", func(t *testing.T) []v1.Layer {
			return []v1.Layer{layer(t, dir("etc/os-release"))}
		}, OSRelease{}, "not a regular file"},
	})
}

// TestOSReleaseStopsOnceFound checks that layers below the one holding the
// file are not downloaded.
func TestOSReleaseStopsOnceFound(t *testing.T) {
	f := newFixture(t, nil)
	below := layer(t, file("etc/os-release", bookworm))
	img := imageOf(t, "amd64", below, layer(t, file("etc/os-release", trixieFile)))
	f.write("ghcr.io/o/base:1", img)
	got, err := osRelease(t, f, "ghcr.io/o/base:1", digestOf(t, img))
	if err != nil || got.VersionCodename != "trixie" {
		t.Fatalf("OSRelease = %+v, %v", got, err)
	}
	if n := f.rt.count("GET", "/blobs/"+digestOf(t, below)); n != 0 {
		t.Errorf("the lower layer was fetched %d times; requests:\n%s", n, f.rt.log())
	}
}

func writeIndex(t *testing.T, f *fixture, ref string, imgs map[string]v1.Image, order ...string) v1.ImageIndex {
	t.Helper()
	var idx v1.ImageIndex = empty.Index
	for _, platform := range order {
		goos, arch, _ := strings.Cut(platform, "/")
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        imgs[platform],
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: arch}},
		})
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithTransport(f.push)); err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestOSReleaseIndex(t *testing.T) {
	f := newFixture(t, nil)
	imgs := map[string]v1.Image{
		"linux/arm64":   imageOf(t, "arm64", layer(t, file("etc/os-release", "ID=debian\nVERSION_CODENAME=arm\n"))),
		"linux/amd64":   imageOf(t, "amd64", layer(t, file("etc/os-release", bookworm))),
		"linux/s390x":   imageOf(t, "s390x", layer(t, file("etc/os-release", "ID=debian\nVERSION_CODENAME=s390x\n"))),
		"unknown/":      imageOf(t, "unknown", layer(t, file("attestation", "{}"))),
		"windows/amd64": imageOf(t, "amd64", layer(t, file("Files/x", "y"))),
	}
	tests := []struct {
		name, ref string
		order     []string
		want      string // codename; "" for an error
	}{
		{"amd64 wins", "ghcr.io/o/multi:1", []string{"unknown/", "linux/arm64", "linux/amd64"}, "bookworm"},
		{"else the first linux", "ghcr.io/o/multi:2", []string{"unknown/", "windows/amd64", "linux/s390x", "linux/arm64"}, "s390x"},
		{"no linux", "ghcr.io/o/multi:3", []string{"unknown/", "windows/amd64"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := writeIndex(t, f, tt.ref, imgs, tt.order...)
			d := digestOf(t, idx)
			got, err := osRelease(t, f, tt.ref, d)
			if tt.want == "" {
				checkErr(t, err, tt.ref+"@"+d, "ghcr.io", "no linux image in the index")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.VersionCodename != tt.want {
				t.Errorf("codename %q, want %q", got.VersionCodename, tt.want)
			}
		})
	}
}

func TestOSReleaseErrors(t *testing.T) {
	f := newFixture(t, nil)
	img := imageOf(t, "amd64", layer(t, file("etc/os-release", bookworm)))
	f.write("ghcr.io/o/base:1", img)
	unknown := "sha256:" + strings.Repeat("ab", 32)
	_, err := osRelease(t, f, "ghcr.io/o/base:1", unknown)
	checkErr(t, err, "ghcr.io/o/base:1@"+unknown, "ghcr.io", "not found")
	_, err = osRelease(t, f, "ghcr.io/o/base:1", "latest")
	if err == nil || !strings.Contains(err.Error(), `"latest"`) {
		t.Errorf("an invalid digest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = f.resolver(RegistryOptions{}).OSRelease(ctx, mustRef(t, "ghcr.io/o/base:1"), digestOf(t, img))
	checkErr(t, err, "ghcr.io/o/base:1@"+digestOf(t, img), "ghcr.io", "canceled")
}

func TestParseOSRelease(t *testing.T) {
	tests := []struct {
		in   string
		want OSRelease
	}{
		{bookworm, OSRelease{ID: "debian", VersionCodename: "bookworm"}},
		{trixieFile, trixie},
		{"ID=ubuntu\nVERSION_CODENAME=noble\n", OSRelease{ID: "ubuntu", VersionCodename: "noble"}},
		{"NAME=x\n", OSRelease{ID: "linux"}},
		{`ID="a\"b\\c\$d"` + "\n", OSRelease{ID: `a"b\c$d`}},
		{"  ID=debian  \r\nVERSION_CODENAME=\n", OSRelease{ID: "debian"}},
		{"ID=debian\nID=ubuntu\n", OSRelease{ID: "ubuntu"}},
		{"garbage\n=x\nID\n", OSRelease{ID: "linux"}},
	}
	for _, tt := range tests {
		if got := parseOSRelease([]byte(tt.in)); got != tt.want {
			t.Errorf("parseOSRelease(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}
