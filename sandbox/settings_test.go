package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/internal/testing/testca"
)

// A command loads its settings once: the local CA and its compose
// commands get what it loaded, even when the file changes in between.
func TestSettingsLoadedOnce(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, k := range []string{settings.EnvCACertificates, settings.EnvDebianArchive, settings.EnvNPMRegistry, "NPM_CONFIG_REGISTRY"} {
		t.Setenv(k, "")
	}
	ca, err := testca.New()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(config, "corp.pem")
	settingsFile := filepath.Join(config, "agentbox", settings.FileName)
	for path, data := range map[string]string{caFile: string(ca.PEM), settingsFile: "ca_certificates: [" + caFile + "]\n"} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := settings.LoadUser(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	// The file changes after the command loaded it.
	if err := os.WriteFile(settingsFile, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(caFile); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteLocalCA(dir, s); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(generator.LocalCA))); string(got) != string(ca.PEM) {
		t.Errorf("%s: %q, want the loaded certificate", generator.LocalCA, got)
	}
	env, err := EnvironWith(s)("build")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, settings.EnvBuildCA+"="+string(ca.PEM)) {
		t.Errorf("compose build does not get the loaded certificate")
	}
	if env, err := Environ("build"); err != nil || slices.Contains(env, settings.EnvBuildCA+"="+string(ca.PEM)) {
		t.Errorf("Environ reads the file as it is now: %v", err)
	}
}
