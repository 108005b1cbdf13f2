package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/sandbox"
)

// A mirror on loopback answers bump but never a build container: bump, up
// and build refuse it before anything runs, and say what to use instead.
func TestLoopbackMirrorRefused(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("AGENTBOX_DEBIAN_ARCHIVE", "http://127.0.0.1:3142/snapshot")
	t.Setenv("NPM_CONFIG_REGISTRY", "")
	const want = `$AGENTBOX_DEBIAN_ARCHIVE: debian.archive: "http://127.0.0.1:3142/snapshot" is on loopback, which a build container cannot reach`
	for _, command := range []string{"up", "build"} {
		if _, err := sandbox.Environ(command); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "http://172.17.0.1:3142/snapshot") {
			t.Errorf("compose %s: %v, want %q and the docker0 address", command, err, want)
		}
	}
	d := testDeps()
	d.settings = realDeps().settings
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), []byte("agent: claude\n"))
	_, stderr, code := runDeps(t, d, "bump", "-C", dir)
	if code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("bump: exit %d, stderr %q; want it to refuse with %q", code, stderr, want)
	}
}
