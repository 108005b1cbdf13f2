package images

import (
	"strings"
	"testing"
)

const fakeDigest = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseRef(t *testing.T) {
	good := []struct{ in, repo, tag, digest, key string }{
		{"debian:bookworm-slim", "debian", "bookworm-slim", "", "index.docker.io/library/debian:bookworm-slim"},
		{"docker.io/library/debian:bookworm-slim", "docker.io/library/debian", "bookworm-slim", "", "index.docker.io/library/debian:bookworm-slim"},
		{"ghcr.io/o/r:v1.2", "ghcr.io/o/r", "v1.2", "", "ghcr.io/o/r:v1.2"},
		{"127.0.0.1:5000/x:1", "127.0.0.1:5000/x", "1", "", "127.0.0.1:5000/x:1"},
		{"node:24-bookworm-slim@" + fakeDigest, "node", "24-bookworm-slim", fakeDigest, "index.docker.io/library/node:24-bookworm-slim"},
		{"localhost:5000/a/b/c:latest@" + fakeDigest, "localhost:5000/a/b/c", "latest", fakeDigest, "localhost:5000/a/b/c:latest"},
	}
	for _, g := range good {
		r, err := ParseRef(g.in)
		if err != nil {
			t.Errorf("ParseRef(%q): %v", g.in, err)
			continue
		}
		if r.Repo != g.repo || r.Tag != g.tag || r.Digest != g.digest {
			t.Errorf("ParseRef(%q) = %+v", g.in, r)
		}
		if r.String() != g.in {
			t.Errorf("String() = %q, want %q", r.String(), g.in)
		}
		if r.Key() != g.key {
			t.Errorf("Key() = %q, want %q", r.Key(), g.key)
		}
	}
	bad := map[string]string{
		"":                                   "empty",
		"debian":                             "has no tag",
		"127.0.0.1:5000/x":                   "has no tag",
		"debian@" + fakeDigest:               "has no tag",
		"debian:x@sha256:abc":                "invalid digest",
		"debian:x@md5:" + fakeDigest:         "invalid digest",
		"Debian:x":                           "invalid image reference",
		"debian:x;rm -rf /":                  "invalid image reference",
		"debian:$(id)":                       "invalid image reference",
		"debian:x\nRUN id":                   "invalid image reference",
		"debian:" + strings.Repeat("a", 200): "invalid image reference",
		"-debian:x":                          "invalid image reference",
		"debian:x y":                         "invalid image reference",
		strings.Repeat("a/", 200) + "x:1":    "longer than",
	}
	for in, want := range bad {
		if _, err := ParseRef(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRef(%q) error = %v, want it to contain %q", in, err, want)
		}
	}
}
