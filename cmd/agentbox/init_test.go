package main

import "testing"

// TestInitNextStep: bump pins and generates, so init names bump alone.
func TestInitNextStep(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runIn(t, dir, "init", "--agent", "claude")
	want := "agentbox: wrote agentbox.yaml; next: agentbox bump (pins the images and the agent's version in agentbox.lock, and generates the sandbox's files)\n"
	if code != exitOK || stderr != want {
		t.Errorf("exit %d, stderr %q; want 0 and %q", code, stderr, want)
	}
}
