package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDockerPS writes a docker whose ps prints the id in the file it
// returns (nothing when the file is empty) and whose inspect says running.
func fakeDockerPS(t *testing.T) (docker, idFile string) {
	t.Helper()
	bin := t.TempDir()
	idFile = filepath.Join(bin, "id")
	docker = filepath.Join(bin, "docker")
	if err := os.WriteFile(docker, []byte(`#!/bin/sh
case "$1" in
  ps) cat `+idFile+` ;;
  inspect) echo "true 0 running 0001-01-01T00:00:00Z" ;;
  *) echo "fake docker: unexpected $*" >&2; exit 1 ;;
esac
`), 0o755); err != nil {
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

	if Stale(ctx, docker, dir, "proj") {
		t.Fatal("stale with no record of up")
	}
	if err := RecordUp(ctx, docker, dir, "proj"); err != nil {
		t.Fatal(err)
	}
	if Stale(ctx, docker, dir, "proj") {
		t.Error("stale right after up")
	}
	writeFile(t, job, []byte("kind: Job # changed\n"))
	if Stale(ctx, docker, dir, "proj") {
		t.Error("a change under kubernetes/ made the sandbox stale")
	}
	writeFile(t, rules, []byte("table inet agentbox { } # changed\n"))
	var b strings.Builder
	WarnStale(ctx, docker, dir, "proj", &b)
	if b.String() != StaleNote {
		t.Errorf("after a change to the ruleset: %q, want the note", b.String())
	}
	if Stale(ctx, docker, dir, "other") {
		t.Error("another project is stale")
	}
	writeFile(t, idFile, []byte("egress-2\n"))
	if Stale(ctx, docker, dir, "proj") {
		t.Error("a sandbox up did not start is judged")
	}
	writeFile(t, idFile, nil)
	if Stale(ctx, docker, dir, "proj") {
		t.Error("no sandbox running, and judged stale")
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
