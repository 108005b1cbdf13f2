package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/generator"
)

func TestPush(t *testing.T) {
	t.Parallel()
	d, f := fake(t, map[string]any{
		"tag p-agent reg.test/p-agent:abc": "",
		"push reg.test/p-agent:abc":        "pushed\n",
		"image inspect --format {{range .RepoDigests}}{{println .}}{{end}} reg.test/p-agent:abc": "other.test/p-agent@sha256:00\nreg.test/p-agent@sha256:11\n",
	})
	var stderr strings.Builder
	ref, err := d.Push(context.Background(), "p-agent", "reg.test/p-agent", "abc", &stderr)
	if err != nil || ref != "reg.test/p-agent:abc@sha256:11" {
		t.Fatalf("%q %v", ref, err)
	}
	if stderr.String() != "pushed\n" {
		t.Errorf("push's output %q, want it on stderr", stderr.String())
	}
	if len(f.Ran) != 3 {
		t.Errorf("ran %q", f.Ran)
	}
	d, _ = fake(t, map[string]any{"tag p-agent reg.test/p-agent:abc": errors.New("exit status 1")})
	if _, err := d.Push(context.Background(), "p-agent", "reg.test/p-agent", "abc", io.Discard); err == nil || !strings.Contains(err.Error(), "docker tag p-agent: exit status 1") {
		t.Errorf("a failed tag: %v", err)
	}
}

// TestPullBases: the daemon pulls the pinned bases it does not have, once
// each; the ones it has are not asked for again.
func TestPullBases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const a, b = "debian:bookworm@sha256:aa", "node:24@sha256:bb"
	for name, text := range map[string]string{
		"egress.Dockerfile": "FROM " + a + " AS build\nFROM build\n",
		"agent.Dockerfile":  "FROM --platform=linux/amd64 " + b + "\nRUN true\nFROM " + a + "\nFROM unpinned:1\n",
	} {
		path := filepath.Join(dir, generator.OutDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, f := fake(t, map[string]any{
		"image inspect --format {{.Id}} " + a: "sha256:1\n",
		"image inspect --format {{.Id}} " + b: errors.New("exit status 1"),
		"pull " + b:                           "",
	})
	var stderr strings.Builder
	if err := d.PullBases(context.Background(), dir, &stderr); err != nil {
		t.Fatal(err)
	}
	if want := []string{"image inspect --format {{.Id}} " + a, "image inspect --format {{.Id}} " + b, "pull " + b}; !slices.Equal(f.Ran, want) {
		t.Errorf("ran %q, want %q", f.Ran, want)
	}
	if !strings.Contains(stderr.String(), "pulling the base image "+b) || strings.Contains(stderr.String(), a) {
		t.Errorf("stderr %q", stderr.String())
	}
}
