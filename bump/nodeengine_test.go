package bump

import (
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/lockfile"
)

func TestAgentNode(t *testing.T) {
	d := &lockfile.Debian{Releases: map[string]string{"debian:bookworm-slim": "bookworm", "acme/tools:1": "bookworm"},
		Pins: map[string]map[string]lockfile.ArchPins{"bookworm": {
			"amd64": {Versions: map[string]string{"nodejs": "18.19.0+dfsg-6~deb12u2"}},
			"arm64": {Versions: map[string]string{"nodejs": "18.19.0+dfsg-6~deb12u2"}}}}}
	for _, tc := range []struct {
		ref, low, high, what string
		ok                   bool
	}{
		{"node:24-bookworm-slim", "24.0.0", "24.4294967295.4294967295", "Node 24 of the base image node:24-bookworm-slim", true},
		{"127.0.0.1:5000/agentbox-e2e/node:24-bookworm-slim", "24.0.0", "24.4294967295.4294967295", "Node 24 of", true},
		{"node:22.12-slim", "22.12.0", "22.12.4294967295", "Node 22.12 of", true},
		{"node:20.11.1", "20.11.1", "20.11.1", "Node 20.11.1 of", true},
		{"node:lts-bookworm", "", "", "", false},
		{"debian:bookworm-slim", "18.19.0", "18.19.0", "Debian bookworm's nodejs 18.19.0", true},
		{"ghcr.io/acme/unknown:1", "", "", "", false},
	} {
		ref, err := images.ParseRef(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := agentNode(config.ImageSpec{Ref: ref}, d)
		if ok != tc.ok || ok && (n.low.String() != tc.low || n.high.String() != tc.high || !strings.Contains(n.what, tc.what)) {
			t.Errorf("%s: %v %s..%s %q, want %v %s..%s %q", tc.ref, ok, n.low, n.high, n.what, tc.ok, tc.low, tc.high, tc.what)
		}
	}
	for in, want := range map[string]string{"18.19.0+dfsg-6~deb12u2": "18.19.0", "1:20.1.0-1": "20.1.0", "22.0.0~rc1": "22.0.0"} {
		if got := debianUpstream(in); got != want {
			t.Errorf("debianUpstream(%q) = %q, want %q", in, got, want)
		}
	}
}
