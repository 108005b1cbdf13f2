package config

// Limits on agentbox.yaml. The loader enforces them, so that validate
// reports them as generate does, and they keep every file that generate
// writes well within what its readers take: compose-go refuses a compose
// file of more than 100,000 YAML nodes, and Linux takes at most 128 KiB in
// one environment string (MAX_ARG_STRLEN).
const (
	MaxFileSize  = 1 << 20   // bytes of agentbox.yaml
	MaxEntries   = 1000      // variables in env; entries in each list
	MaxEnvString = 128 << 10 // bytes of NAME=VALUE with its terminating NUL
)
