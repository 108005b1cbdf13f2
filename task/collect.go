package task

// The collection of a task's branch from its clone: a script that runs in
// a container of its own (collectArgs) or in a cluster task's collect
// container, and runs nothing of the clone's.

import (
	"cmp"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/shquote"
)

//go:embed collect.sh
var collectScript string

// BundleScript, run by sh with the task's name as $1, writes the status of
// the clone at workspace on stderr, line by line, then a bundle of the
// task's branch (renamed TASK, so that fetch's prefix makes it
// agentbox/TASK) on stdout (collect.sh).
func BundleScript(workspace string) string {
	return "ws=" + shquote.Word(workspace) + "\n" + collectScript
}

// collectPids bounds the processes of the collect container.
const collectPids = 64

// collectArgs are the arguments of docker run of the container that runs
// BundleScript on a local task's workspace volume: locked down as the
// agent's container is (no capabilities, no new privileges, the agent's
// uid, its memory and CPU limits or less), with no network and a
// read-only root.
func collectArgs(cfg *config.Config, rec *Record) []string {
	profile := cmp.Or(rec.Profile, config.ProfileBalanced)
	vol := generator.Volume(rec.Project, profile, generator.WorkspaceVolume)
	mem, pids, cpus := cfg.Memory, cfg.Pids, cfg.CPUs
	if prof, ok := cfg.Profile(profile); ok {
		mem, pids, cpus = prof.Memory, prof.Pids, prof.CPUs
	}
	mem = cmp.Or(mem, config.DefaultMemory)
	return []string{"--rm", "--network", "none", "--user", fmt.Sprintf("%d:%d", cfg.UID, cfg.GID),
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--read-only",
		"--tmpfs", "/tmp:rw,nosuid,nodev,noexec,size=256m",
		"--pids-limit", strconv.Itoa(min(collectPids, max(pids, 1))),
		"--memory", mem, "--memory-swap", mem,
		"--cpus", strconv.FormatFloat(collectCPUs(cpus), 'f', -1, 64),
		"-v", vol + ":/workspace:ro", "--entrypoint", "sh", cfg.Name + "-agent", "-c", BundleScript("/workspace"), "sh", rec.Name}
}

// collectCPUs is the collect container's CPU limit: the agent's, at most one.
func collectCPUs(agent float64) float64 {
	if agent > 0 && agent < 1 {
		return agent
	}
	return 1
}
