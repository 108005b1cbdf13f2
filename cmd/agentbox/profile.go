package main

// Profiles (trust tiers) at run time: up and run choose one (--profile);
// every other command finds the one the sandbox or the task runs, from the
// label that the generated compose file puts on its egress container. The
// agent can change neither the label nor the egress container's
// environment, and nothing it can write is read when a sandbox starts.

import (
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// profileFlagUsage is the help of --profile on up and run.
const profileFlagUsage = "the profile (trust tier) to start: locked, balanced, open or one of profiles: in agentbox.yaml (default: profile: in agentbox.yaml, else balanced)"

// checkProfile returns name, or the default profile when name is empty,
// after checking that cfg has it; a name it has not is a usage error.
func checkProfile(cfg *config.Config, name string) (string, error) {
	p, err := sandbox.CheckProfile(cfg, name)
	if err != nil {
		return "", usageErrorf("--profile: %v", err)
	}
	return p, nil
}
