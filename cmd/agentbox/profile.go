package main

// Profiles (trust tiers) at run time: up and run choose one (--profile);
// every other command finds the one the sandbox or the task runs, from the
// label that the generated compose file puts on its egress container. The
// agent can change neither the label nor the egress container's
// environment, and nothing it can write is read when a sandbox starts.

// profileFlagUsage is the help of --profile on up and run.
const profileFlagUsage = "the profile (trust tier) to start: locked, balanced, open or one of profiles: in agentbox.yaml (default: profile: in agentbox.yaml, else balanced)"
