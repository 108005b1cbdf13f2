package main

import (
	"slices"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/settings"
)

func TestRegistryMirrorsSettingsThenDaemon(t *testing.T) {
	s := settings.Settings{Registries: settings.Registries{Mirrors: []string{"http://127.0.0.1:5000", "https://m.test"}}}
	daemon := parseDaemonMirrors([]byte(`["https://m.test/","https://d.test/"]` + "\n"))
	got := registryMirrors(s, daemon)
	want := []string{"http://127.0.0.1:5000", "https://m.test", "https://d.test/"}
	if !slices.Equal(got, want) {
		t.Errorf("registryMirrors = %q, want %q", got, want)
	}
	if got := parseDaemonMirrors([]byte("null\n")); got != nil {
		t.Errorf("docker info without mirrors: %q", got)
	}
	if got := registryMirrors(settings.Settings{}, nil); got != nil {
		t.Errorf("no mirrors: %q", got)
	}
}
