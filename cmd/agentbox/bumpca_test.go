package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// Builds get npm's credential for the registry in use: the settings', else
// npm's configured one; none for another registry.
func TestBuildNPMRC(t *testing.T) {
	dir := t.TempDir()
	rc := filepath.Join(dir, "npmrc")
	if err := os.WriteFile(rc, []byte("registry=https://npm.internal/\n//npm.internal/:_authToken=${T}\n//mirror.internal/:_authToken=m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string { return map[string]string{"NPM_CONFIG_USERCONFIG": rc, "T": "tok"}[k] }
	if got := sandbox.BuildNPMRC(settings.Settings{}, getenv); got != "registry=https://npm.internal/\n//npm.internal/:_authToken=tok\n" {
		t.Errorf("npm's registry: %q", got)
	}
	s := settings.Settings{NPM: settings.NPM{Registry: "https://mirror.internal"}}
	if got := sandbox.BuildNPMRC(s, getenv); got != "registry=https://mirror.internal/\n//mirror.internal/:_authToken=m\n" {
		t.Errorf("the settings' registry: %q", got)
	}
	s.NPM.Registry = "https://other.internal/"
	if got := sandbox.BuildNPMRC(s, getenv); got != "" {
		t.Errorf("a registry without a credential: %q", got)
	}
}
