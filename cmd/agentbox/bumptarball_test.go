package main

import (
	"crypto/sha512"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBumpRefusesChangedTarball: a registry that serves another tarball
// (another integrity) for a version agentbox.lock pins is refused, naming
// the package, both integrities and the flag, and nothing is written;
// --accept-changed-tarball NAME@VERSION records it, with a warning.
func TestBumpRefusesChangedTarball(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	h.push("node:24-bookworm-slim", "node-1", true)
	h.push("debian:bookworm-slim", "debian-1", true)
	h.publish("@anthropic-ai/claude-code", "2.1.0", "", map[string]string{"dep": "^1"})
	h.publish("dep", "1.0.0", "", nil)
	dir := bumpProject(t, "agent: claude\n", "")
	if _, stderr, code := h.run(t, dir, "bump"); code != exitOK {
		t.Fatalf("bump: exit %d: %s", code, stderr)
	}
	old := h.docs["dep"].Versions["1.0.0"].Dist.Integrity
	m := h.docs["dep"].Versions["1.0.0"]
	sum := sha512.Sum512([]byte("other code"))
	m.Dist.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	h.docs["dep"].Versions["1.0.0"] = m

	before := readAll(t, dir)
	for _, args := range [][]string{{"bump"}, {"bump", "--check"}, {"bump", "--accept-changed-tarball", "dep@1.0.1"}} {
		_, stderr, code := h.run(t, dir, args...)
		if code != exitError {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitError, stderr)
		}
		for _, w := range []string{"dep@1.0.0", old[:19], m.Dist.Integrity[:19], "--accept-changed-tarball dep@1.0.0"} {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, w, stderr)
			}
		}
	}
	if !sameTree(before, readAll(t, dir)) {
		t.Error("a refused bump wrote files")
	}

	_, stderr, code := h.run(t, dir, "bump", "--accept-changed-tarball", "dep@1.0.0")
	if code != exitOK {
		t.Fatalf("bump --accept-changed-tarball: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "warning") || !strings.Contains(stderr, "dep@1.0.0") {
		t.Errorf("no warning of the accepted tarball:\n%s", stderr)
	}
	lock, _ := os.ReadFile(filepath.Join(dir, "agentbox.lock"))
	if !strings.Contains(string(lock), m.Dist.Integrity) {
		t.Errorf("the accepted integrity is not in the lock:\n%s", lock)
	}
}
