package sandbox

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
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
