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

// TestStaleSandbox: after up recorded the files and the egress container,
// a change to a generated file (not one under kubernetes/) makes the
// running sandbox stale; another egress container (recreated by compose,
// the Dev Container) is not judged.
func TestStaleSandbox(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	ctx := context.Background()
	docker, idFile := fakeDockerPS(t)
	dir := t.TempDir()
	rules := filepath.Join(dir, ".agentbox", "egress", "rules.nft")
	job := filepath.Join(dir, ".agentbox", "kubernetes", "job.yaml")
	writeFile(t, rules, []byte("table inet agentbox {}\n"))
	writeFile(t, job, []byte("kind: Job\n"))
	writeFile(t, idFile, []byte("egress-1\n"))

	if sandbox.Stale(ctx, docker, dir, "proj") {
		t.Fatal("stale with no record of up")
	}
	if err := sandbox.RecordUp(ctx, docker, dir, "proj"); err != nil {
		t.Fatal(err)
	}
	if sandbox.Stale(ctx, docker, dir, "proj") {
		t.Error("stale right after up")
	}
	writeFile(t, job, []byte("kind: Job # changed\n"))
	if sandbox.Stale(ctx, docker, dir, "proj") {
		t.Error("a change under kubernetes/ made the sandbox stale")
	}
	writeFile(t, rules, []byte("table inet agentbox { } # changed\n"))
	var b strings.Builder
	sandbox.WarnStale(ctx, docker, dir, "proj", &b)
	if b.String() != sandbox.StaleNote {
		t.Errorf("after a change to the ruleset: %q, want the note", b.String())
	}
	if sandbox.Stale(ctx, docker, dir, "other") {
		t.Error("another project is stale")
	}
	writeFile(t, idFile, []byte("egress-2\n"))
	if sandbox.Stale(ctx, docker, dir, "proj") {
		t.Error("a sandbox up did not start is judged")
	}
	writeFile(t, idFile, nil)
	if sandbox.Stale(ctx, docker, dir, "proj") {
		t.Error("no sandbox running, and judged stale")
	}
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
	cfg, err := loadConfig(dir)
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
