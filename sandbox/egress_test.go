package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
)

// TestEgressExec: the sandbox's egress is reached with compose exec, a
// task's by its container's ID; a failure is the first line of stderr.
func TestEgressExec(t *testing.T) {
	f := &FakeRunner{T: t, Answers: map[string]any{
		"compose -f c.yml -p demo exec -T egress /egress grants":                                                                       "198.18.7.0/24 443 10\n",
		"ps -aq --no-trunc --filter label=com.docker.compose.project=demo-task-fix-1 --filter label=com.docker.compose.service=egress": "abc\n",
		"inspect --format {{.State.Running}} {{.State.ExitCode}} {{.State.Status}} {{.State.FinishedAt}} abc":                          "true 0 running 0001-01-01T00:00:00Z\n",
		"exec -i abc /egress revoke x 443": errors.New("exit status 1"),
		"ps -aq --no-trunc --filter label=com.docker.compose.project=demo-task-gone --filter label=com.docker.compose.service=egress": "",
	}}
	d := Docker{Path: "docker", Runner: f}
	eg := ComposeEgress([]string{"docker", "compose", "-f", "c.yml", "-p", "demo"})
	eg.Runner = f
	if out, err := eg.Output(t.Context(), "/egress", "grants"); err != nil || out != "198.18.7.0/24 443 10\n" {
		t.Errorf("compose exec: %q, %v", out, err)
	}
	task, err := d.TaskEgress(t.Context(), "demo-task-fix-1", "fix-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Output(t.Context(), "/egress", "revoke", "x", "443"); err == nil || err.Error() != "exit status 1" {
		t.Errorf("a failing exec: %v", err)
	}
	if _, err := d.TaskEgress(t.Context(), "demo-task-gone", "gone"); err == nil || !strings.Contains(err.Error(), "task gone has no egress container") {
		t.Errorf("no container: %v", err)
	}
}

// TestEgressLog: the log of the sandbox's egress is compose logs of the
// service, from since on.
func TestEgressLog(t *testing.T) {
	eg := ComposeEgress([]string{"echo", "compose", "-p", "demo"})
	r, err := eg.Log(t.Context(), time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if want := "compose -p demo logs --no-color --no-log-prefix --timestamps --since 2026-11-22T10:00:00Z egress\n"; err != nil || string(out) != want {
		t.Errorf("log command %q (%v), want %q", out, err, want)
	}
}

// TestEgressIn: allow and policy reach the sandbox's egress with compose
// exec on the profile it runs, and a task's by its container's ID, both
// after the checks of docker; the sandbox must run for them, not for
// blocked's log.
func TestEgressIn(t *testing.T) {
	dir := generated(t, "agent-none")
	cfg, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	calls, running := filepath.Join(bin, "calls"), filepath.Join(bin, "running")
	writeFile(t, filepath.Join(bin, "docker"), []byte(`#!/bin/sh
echo "$*" >>`+calls+`
case "$*" in
  "compose version --short") echo v2.29.0 ;;
  "version --format {{.Server.Version}}") echo 27.0.0 ;;
  "ps --filter label=com.docker.compose.project=`+cfg.Name+` "*) cat `+running+` ;;
  "ps -aq --no-trunc --filter label=com.docker.compose.project=`+cfg.Name+`-task-fix-1 "*) echo abc ;;
  "inspect "*) echo "true 0 running 0001-01-01T00:00:00Z" ;;
  *" exec -T egress `+firewall.EntrypointPath+` grants") echo "198.18.7.0/24 443 10" ;;
  "exec -i abc `+firewall.EntrypointPath+` policies") echo "docs.example.com 443" ;;
  *"logs --"*) echo "log: $*" ;;
  *) echo "fake docker: unexpected $*" >&2; exit 1 ;;
esac
`))
	if err := os.Chmod(filepath.Join(bin, "docker"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	writeFile(t, running, nil)
	ctx := t.Context()
	if _, err := RunEgress(ctx, dir, "", "grants"); err == nil || !strings.Contains(err.Error(), "agentbox up") {
		t.Errorf("no sandbox running: %v", err)
	}
	if out := readLog(t, ctx, dir, ""); !strings.Contains(out, " logs --no-color --no-log-prefix --timestamps egress") {
		t.Errorf("the log of a sandbox that does not run: %q", out)
	}
	writeFile(t, running, []byte("e1 balanced\n"))
	if out, err := RunEgress(ctx, dir, "", "grants"); err != nil || out != "198.18.7.0/24 443 10\n" {
		t.Errorf("the sandbox's egress: %q, %v", out, err)
	}
	if out, err := RunEgress(ctx, dir, "fix-1", "policies"); err != nil || out != "docs.example.com 443\n" {
		t.Errorf("a task's egress: %q, %v", out, err)
	}
	if out := readLog(t, ctx, dir, "fix-1"); out != "log: logs --timestamps abc\n" {
		t.Errorf("a task's log: %q", out)
	}
	data, _ := os.ReadFile(calls)
	if want := "compose -f " + filepath.Join(dir, ".agentbox", "docker-compose.yml") + " -p " + cfg.Name + " exec -T egress"; !strings.Contains(string(data), want) {
		t.Errorf("docker ran:\n%s\nwant %q", data, want)
	}
}

// readLog reads the egress log of the sandbox in dir or of its task.
func readLog(t *testing.T, ctx context.Context, dir, task string) string {
	t.Helper()
	r, err := EgressLog(ctx, dir, task, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
