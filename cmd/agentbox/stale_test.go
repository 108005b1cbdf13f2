package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/sandbox"
)

// fakeDockerPS writes a docker whose ps prints the id in the file it
// returns (nothing when the file is empty) and whose inspect says running.
func fakeDockerPS(t *testing.T) (docker, idFile string) {
	t.Helper()
	bin := t.TempDir()
	idFile = filepath.Join(bin, "id")
	docker = filepath.Join(bin, "docker")
	writeFile(t, docker, []byte(`#!/bin/sh
case "$1" in
  ps) cat `+idFile+` ;;
  inspect) echo "true 0 running 0001-01-01T00:00:00Z" ;;
  *) echo "fake docker: unexpected $*" >&2; exit 1 ;;
esac
`))
	if err := os.Chmod(docker, 0o755); err != nil {
		t.Fatal(err)
	}
	return docker, idFile
}

// TestGenerateSaysSandboxIsStale: generate, having changed the files, says
// that the sandbox agentbox up started from the old ones is older.
func TestGenerateSaysSandboxIsStale(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	docker, idFile := fakeDockerPS(t)
	t.Setenv("PATH", filepath.Dir(docker)+":"+os.Getenv("PATH"))
	writeFile(t, idFile, []byte("egress-1\n"))
	dir := setupCase(t, filepath.Join(goldenDir, "agent-none"))
	if _, stderr, code := runIn(t, dir, "generate"); code != exitOK || strings.Contains(stderr, "running sandbox") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cfg, err := sandbox.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := sandbox.RecordUp(context.Background(), docker, dir, cfg.Name); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), []byte("agent: none\ndevcontainer: {ide: none}\nnetwork: {domains: [api.example.com]}\n"))
	_, stderr, code := runIn(t, dir, "generate")
	if code != exitOK || !strings.Contains(stderr, sandbox.StaleNote) {
		t.Errorf("exit %d, stderr %q: want the note", code, stderr)
	}
}
