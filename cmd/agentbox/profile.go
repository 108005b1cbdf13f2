package main

// Profiles (trust tiers) at run time: up and run choose one (--profile);
// every other command finds the one the sandbox or the task runs, from the
// label that the generated compose file puts on its egress container. The
// agent can change neither the label nor the egress container's
// environment, and nothing it can write is read when a sandbox starts.

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
)

// profileFlagUsage is the help of --profile on up and run.
const profileFlagUsage = "the profile (trust tier) to start: locked, balanced, open or one of profiles: in agentbox.yaml (default: profile: in agentbox.yaml, else balanced)"

// checkProfile returns name, or the default profile when name is empty,
// after checking that cfg has it.
func checkProfile(cfg *config.Config, name string) (string, error) {
	if name == "" {
		return cfg.DefaultProfile, nil
	}
	if _, ok := cfg.Profile(name); !ok {
		return "", usageErrorf("--profile: %v", config.ProfileError(cfg, name))
	}
	return name, nil
}

// labelledProfile returns the profile label of compose project's egress
// container: "" when no egress container runs, balanced when one without
// the label (made before profiles) does.
func labelledProfile(ctx context.Context, docker, project string) (string, error) {
	out, err := exec.CommandContext(ctx, docker, "ps",
		"--filter", "label=com.docker.compose.project="+project,
		"--filter", "label=com.docker.compose.service=egress",
		"--format", `{{.ID}} {{.Label "`+generator.ProfileLabel+`"}}`).Output()
	if err != nil {
		return "", fmt.Errorf("listing the egress container of compose project %q: %v", project, err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return "", nil
	}
	_, profile, _ := strings.Cut(line, " ")
	if profile == "" {
		return config.ProfileBalanced, nil
	}
	return profile, nil
}

// errNoSandbox says that no sandbox of compose project runs, to a command
// that needs one.
func errNoSandbox(project string) error {
	return fmt.Errorf("no sandbox runs for this project (compose project %q): start it with \"agentbox up\"", project)
}

// profileComposeFile is profile's compose file in dir; a profile that
// agentbox.yaml no longer has (a sandbox started before a change) gets the
// default's, enough to stop it (down removes orphans).
func profileComposeFile(dir string, cfg *config.Config, profile string) string {
	if _, ok := cfg.Profile(profile); !ok {
		profile = cfg.DefaultProfile
	}
	return filepath.Join(dir, generator.ProfileCompose(cfg, profile))
}

// dockerProfile is deps.profile: the profile of the running sandbox (task
// "") or of a task.
func dockerProfile(ctx context.Context, dir, task string) (string, error) {
	o := &taskOptions{dir: dir}
	if err := o.load(ctx); err != nil {
		return "", err
	}
	project := o.cfg.Name
	if task != "" {
		project = generator.TaskProject(o.cfg.Name, task)
	}
	p, err := labelledProfile(ctx, o.docker, project)
	switch {
	case err == nil && p == "" && task == "":
		err = errNoSandbox(project)
	case err == nil && p == "":
		err = fmt.Errorf("task %s has no egress container running (agentbox ps lists the tasks)", task)
	}
	return p, err
}

// profileOf returns the profile called name, or says that agentbox.yaml
// has none of that name.
func profileOf(cfg *config.Config, name string) (*config.Profile, error) {
	p, ok := cfg.Profile(name)
	if !ok {
		return nil, fmt.Errorf("the sandbox runs profile %q, which %s no longer has: restart it (agentbox down, agentbox up)", name, config.ConfigFile)
	}
	return p, nil
}
