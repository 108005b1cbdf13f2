package config

import "testing"

// loadString decodes yaml as agentbox.yaml of an empty project.
func loadString(t *testing.T, yaml string) (*Config, error) {
	t.Helper()
	cfg, _, err := Decode(ConfigFile, []byte(yaml), t.TempDir())
	return cfg, err
}
