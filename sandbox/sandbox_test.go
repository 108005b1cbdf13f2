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
)

func fake(t *testing.T, answers map[string]any) (Docker, *FakeRunner) {
	f := &FakeRunner{T: t, Answers: answers}
	return Docker{Path: "docker", Runner: f}, f
}

func TestServiceState(t *testing.T) {
	d, _ := fake(t, map[string]any{
		"ps -aq --no-trunc --filter label=com.docker.compose.project=p-task-t1 --filter label=com.docker.compose.service=agent":  "abc\nold\n",
		"inspect --format {{.State.Running}} {{.State.ExitCode}} {{.State.Status}} {{.State.FinishedAt}} abc":                    "false 3 exited 2026-11-27T06:00:00.5Z\n",
		"ps -aq --no-trunc --filter label=com.docker.compose.project=p-task-t1 --filter label=com.docker.compose.service=egress": "",
	})
	s, err := d.ServiceState(context.Background(), "p-task-t1", "agent")
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 11, 27, 6, 0, 0, 5e8, time.UTC)
	if s.ID != "abc" || s.Running || s.ExitCode != 3 || s.Status != "exited" || !s.Finished.Equal(want) {
		t.Errorf("state %+v", s)
	}
	if s, err := d.ServiceState(context.Background(), "p-task-t1", "egress"); s != nil || err != nil {
		t.Errorf("no container: %+v, %v; want nil, nil", s, err)
	}
}

func TestLabelledProfile(t *testing.T) {
	const ps = `ps --filter label=com.docker.compose.project=%s --filter label=com.docker.compose.service=egress --format {{.ID}} {{.Label "dev.agentbox.profile"}}`
	d, _ := fake(t, map[string]any{
		strings.Replace(ps, "%s", "none", 1):   "",
		strings.Replace(ps, "%s", "old", 1):    "id1 \n",
		strings.Replace(ps, "%s", "locked", 1): "id2 locked\n",
		strings.Replace(ps, "%s", "broken", 1): errors.New("exit status 1"),
	})
	for project, want := range map[string]string{"none": "", "old": "balanced", "locked": "locked"} {
		if got, err := d.LabelledProfile(context.Background(), project); got != want || err != nil {
			t.Errorf("%s: %q, %v; want %q", project, got, err, want)
		}
	}
	if _, err := d.LabelledProfile(context.Background(), "broken"); err == nil {
		t.Error("a failed docker ps is no error")
	}
}

func TestCheckOwner(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	ours := filepath.Join(dir, ".agentbox")
	if err := os.MkdirAll(ours, 0o755); err != nil {
		t.Fatal(err)
	}
	const ps = `ps -a --filter label=com.docker.compose.project=%s --format {{.Label "com.docker.compose.project.working_dir"}}`
	d, _ := fake(t, map[string]any{
		strings.Replace(ps, "%s", "mine", 1):   ours + "\n" + filepath.Join(ours, "profiles") + "\n",
		strings.Replace(ps, "%s", "shared", 1): ours + "\n" + filepath.Join(other, ".agentbox") + "\n",
	})
	if err := d.CheckOwner(context.Background(), "mine", dir); err != nil {
		t.Errorf("our own containers: %v", err)
	}
	if err := d.CheckOwner(context.Background(), "shared", dir); err == nil || !strings.Contains(err.Error(), "belongs to another project ("+other+")") {
		t.Errorf("another project's containers: %v", err)
	}
}

// TestFollowEgress: the agent is recreated only when egress started after
// it (the engine restarted egress, and the agent's network is gone).
func TestFollowEgress(t *testing.T) {
	for _, tc := range []struct {
		name     string
		egress   string
		recreate bool
	}{
		{"in order", "2026-11-27T06:00:00Z", false},
		{"egress restarted", "2026-11-27T06:05:00Z", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answers := map[string]any{
				"compose -p demo ps -q egress":             "e1\n",
				"compose -p demo ps -q agent":              "a1\n",
				"inspect --format {{.State.StartedAt}} e1": tc.egress + "\n",
				"inspect --format {{.State.StartedAt}} a1": "2026-11-27T06:01:00Z\n",
			}
			if tc.recreate {
				answers["compose -p demo up -d --wait --force-recreate --no-deps agent"] = ""
			}
			d, f := fake(t, answers)
			c := Compose{Docker: d, Argv: []string{"docker", "compose", "-p", "demo"}, Env: func(string) ([]string, error) { return nil, nil }}
			var stderr strings.Builder
			if err := c.FollowEgress(context.Background(), &stderr); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(stderr.String(), "recreating the agent"); got != tc.recreate {
				t.Errorf("said %q; recreated %v, want %v (ran %q)", stderr.String(), got, tc.recreate, f.Ran)
			}
		})
	}
}

func TestComposeRunFails(t *testing.T) {
	d, _ := fake(t, map[string]any{"compose -p demo build": errors.New("boom")})
	c := Compose{Docker: d, Argv: []string{"docker", "compose", "-p", "demo"}, Env: func(string) ([]string, error) { return nil, nil }}
	if err := c.Run(context.Background(), nil, nil, nil, "build"); err == nil || !strings.Contains(err.Error(), "running docker compose: boom") {
		t.Errorf("Run: %v", err)
	}
}

func TestDaemonError(t *testing.T) {
	for _, tc := range []struct {
		stderr, stdout string
		err            error
		want           string
	}{
		{"ERROR: Cannot connect to the Docker daemon at unix:///var/run/docker.sock\n", "", nil, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock"},
		{"template: :1:8: executing \"\" at <.Server.Version>: nil pointer\n", "permission denied\n", nil, "permission denied"},
		{"", "", errors.New("exit status 1"), "exit status 1"},
		{"", "", nil, "docker version reported no server"},
	} {
		if got := DaemonError([]byte(tc.stderr), []byte(tc.stdout), tc.err); got != tc.want {
			t.Errorf("DaemonError(%q, %q) = %q, want %q", tc.stderr, tc.stdout, got, tc.want)
		}
	}
}

// TestComposeRunInterrupt: a canceled context (Ctrl-C) interrupts docker
// compose, which gets to stop cleanly, rather than killing it; the error
// says the command was interrupted.
func TestComposeRunInterrupt(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	docker, outPath := filepath.Join(tmp, "docker"), filepath.Join(tmp, "out")
	writeFile(t, docker, []byte("#!/bin/bash\ntrap 'echo stopped cleanly; exit 130' INT\necho started\nwhile :; do sleep 0.05; done\n"))
	if err := os.Chmod(docker, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for ctx.Err() == nil {
			if data, _ := os.ReadFile(outPath); strings.Contains(string(data), "started") {
				cancel()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	err = ComposeOf([]string{docker, "compose"}).Run(ctx, strings.NewReader(""), out, io.Discard, "logs", "--follow")
	cancel()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
	if ee := (*ExitError)(nil); !errors.As(err, &ee) || err.Error() != "agentbox: docker compose logs interrupted (context canceled)" {
		t.Errorf("err = %v", err)
	}
	if data, _ := os.ReadFile(outPath); !strings.Contains(string(data), "stopped cleanly") {
		t.Errorf("compose was not interrupted but killed; it printed %q", data)
	}
}
