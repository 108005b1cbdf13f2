package generator

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/images"
)

// InitFile renders the commented agentbox.yaml that `agentbox init` writes,
// and checks that it loads.
func InitFile(dir, agent, ide string) ([]byte, error) {
	a, ok := images.LookupAgent(agent)
	if !ok {
		return nil, fmt.Errorf("%s", enumError("agent", agent, images.AgentNames()))
	}
	data, err := executeTemplate("agentbox.yaml.tmpl", map[string]string{
		"Agent":    a.Name,
		"Agents":   strings.Join(images.AgentNames(), ", "),
		"Base":     a.BaseImage,
		"Services": strings.Join(images.ServiceNames(), ", "),
		"IDE":      ide,
	})
	if err != nil {
		return nil, fmt.Errorf("internal error: rendering %s: %w", ConfigFile, err)
	}
	if _, _, err := decodeConfig(ConfigFile, data, dir); err != nil {
		return nil, fmt.Errorf("internal error: the generated %s does not load: %w", ConfigFile, err)
	}
	return data, nil
}

// ConfigPath returns the path of agentbox.yaml in dir.
func ConfigPath(dir string) string { return filepath.Join(dir, ConfigFile) }
