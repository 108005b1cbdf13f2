package main

// The containers of a task of agentbox run on this machine.

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/task"
)

// taskCompose is docker compose on a task's project: its profile's
// generated file and the task's override.
func taskCompose(docker, dir string, cfg *generator.Config, rec *task.Record, taskDir string) []string {
	profile := rec.Profile
	if profile == "" {
		profile = generator.ProfileBalanced
	}
	return []string{docker, "compose", "-f", profileComposeFile(dir, cfg, profile),
		"-f", filepath.Join(taskDir, "compose.yml"), "-p", rec.Project}
}

// containerState is what docker says of one of a task's containers.
type containerState struct {
	ID       string
	Running  bool
	ExitCode int
	Status   string
	Finished time.Time // zero while it runs
}

// serviceState inspects the task's container of service, if there is one.
func serviceState(ctx context.Context, docker, project, service string) (*containerState, error) {
	out, err := exec.CommandContext(ctx, docker, "ps", "-aq", "--no-trunc",
		"--filter", "label=com.docker.compose.project="+project,
		"--filter", "label=com.docker.compose.service="+service).Output()
	if err != nil {
		return nil, fmt.Errorf("docker ps: %v", err)
	}
	id := strings.TrimSpace(string(out))
	if id == "" {
		return nil, nil
	}
	id, _, _ = strings.Cut(id, "\n")
	out, err = exec.CommandContext(ctx, docker, "inspect", "--format", "{{.State.Running}} {{.State.ExitCode}} {{.State.Status}} {{.State.FinishedAt}}", id).Output()
	if err != nil {
		return nil, fmt.Errorf("docker inspect: %v", err)
	}
	var s containerState
	s.ID = id
	var running, finished string
	if _, err := fmt.Sscan(string(out), &running, &s.ExitCode, &s.Status, &finished); err != nil {
		return nil, fmt.Errorf("docker inspect %s: %q", id, out)
	}
	s.Running = running == "true"
	if t, err := time.Parse(time.RFC3339Nano, finished); err == nil && !s.Running && t.Year() > 1 {
		s.Finished = t
	}
	return &s, nil
}
