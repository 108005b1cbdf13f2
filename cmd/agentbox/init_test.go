package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitNextStep: bump pins and generates, so init names bump alone.
func TestInitNextStep(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runIn(t, dir, "init", "--agent", "claude")
	want := "agentbox: wrote agentbox.yaml; next: agentbox bump (pins the images and the agent's version in agentbox.lock, and generates the sandbox's files)\n"
	if code != exitOK || stderr != want {
		t.Errorf("exit %d, stderr %q; want 0 and %q", code, stderr, want)
	}
}

// TestInitNeedsTheDirectory: -C names a project directory that exists;
// init does not create it (nor its parents) for a mistyped path.
func TestInitNeedsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "file"), []byte("x\n"))
	for _, tt := range []struct{ arg, want string }{
		{"missing/sub", "-C missing/sub: no such directory; create the project directory first"},
		{"file", "-C file: not a directory"},
		{"file/sub", "-C file/sub: not a directory"},
	} {
		t.Run(tt.arg, func(t *testing.T) {
			_, stderr, code := runIn(t, dir, "init", "-C", tt.arg)
			if code != exitError || !strings.HasPrefix(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitError, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("init created the directory: %v", err)
	}
	if _, stderr, code := runIn(t, dir, "init", "-C", "."); code != exitOK {
		t.Errorf("init -C .: exit %d: %s", code, stderr)
	}
}
