package main

// The containers of a task of agentbox run on this machine.

import (
	"path/filepath"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
)

// taskCompose is docker compose on a task's project: its profile's
// generated file and the task's override.
func taskCompose(docker, dir string, cfg *config.Config, rec *task.Record, taskDir string) []string {
	profile := rec.Profile
	if profile == "" {
		profile = config.ProfileBalanced
	}
	return []string{docker, "compose", "-f", sandbox.ComposeFile(dir, cfg, profile),
		"-f", filepath.Join(taskDir, "compose.yml"), "-p", rec.Project}
}
