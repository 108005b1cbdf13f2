package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestRegistryMirrors(t *testing.T) {
	f := &FakeRunner{T: t, Answers: map[string]any{
		"info --format {{json .RegistryConfig.Mirrors}}": `["https://m.test/","https://d.test/"]` + "\n",
	}}
	if got := (Docker{Path: "docker", Runner: f}).RegistryMirrors(t.Context()); !slices.Equal(got, []string{"https://m.test/", "https://d.test/"}) {
		t.Errorf("mirrors %q", got)
	}
	f.Answers["info --format {{json .RegistryConfig.Mirrors}}"] = "null\n"
	if got := (Docker{Path: "docker", Runner: f}).RegistryMirrors(t.Context()); got != nil {
		t.Errorf("docker info without mirrors: %q", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f.Ran = nil
	if got := (Docker{Path: "docker", Runner: f}).RegistryMirrors(ctx); got != nil || f.Ran != nil {
		t.Errorf("a canceled context: mirrors %q, ran %q", got, f.Ran)
	}
}

// A daemon that does not answer holds bump only until its context ends.
func TestRegistryMirrorsStopsWithContext(t *testing.T) {
	docker := filepath.Join(t.TempDir(), "docker")
	if err := os.WriteFile(docker, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if got := (Docker{Path: docker}).RegistryMirrors(ctx); got != nil {
		t.Errorf("mirrors %q", got)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("docker info ran %s after its context ended", d)
	}
}
