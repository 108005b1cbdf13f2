package main

// Profiles (trust tiers) at run time: up and run choose one (--profile);
// every other command finds the one the sandbox or the task runs, from the
// label that the generated compose file puts on its egress container. The
// agent can change neither the label nor the egress container's
// environment, and nothing it can write is read when a sandbox starts.

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
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
	p, err := sandbox.Docker{Path: o.docker}.LabelledProfile(ctx, project)
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
