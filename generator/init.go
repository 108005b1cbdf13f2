package generator

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/validate"
)

// InitFile renders the commented agentbox.yaml that `agentbox init` writes
// for the project name, agent and IDE, and checks that it loads.
func InitFile(dir, name, agent, ide string) ([]byte, error) {
	a, ok := catalog.LookupAgent(agent)
	if !ok {
		return nil, fmt.Errorf("%s", config.EnumError("agent", agent, catalog.AgentNames()))
	}
	gitName, gitEmail := config.GitIdentity(&config.Config{Agent: a})
	data, err := executeTemplate("agentbox.yaml.tmpl", map[string]string{
		"Name":     name,
		"Git":      gitName + " <" + gitEmail + ">",
		"Agent":    a.Name,
		"Agents":   strings.Join(catalog.AgentNames(), ", "),
		"Base":     a.BaseImage,
		"Services": strings.Join(catalog.ServiceNames(), ", "),
		"IDE":      ide,
	})
	if err != nil {
		return nil, fmt.Errorf("internal error: rendering %s: %w", config.ConfigFile, err)
	}
	if cfg, _, err := config.Decode(config.ConfigFile, data, dir); err != nil || cfg.Name != name {
		return nil, fmt.Errorf("internal error: the generated %s does not load: %w", config.ConfigFile, err)
	}
	return data, nil
}

// ConfigPath returns the path of agentbox.yaml in dir.
func ConfigPath(dir string) string { return filepath.Join(dir, config.ConfigFile) }

// InitName is the project name init writes for the project directory dir:
// the directory's name made valid, or, when nothing of it is left (a name
// with no ASCII letter or digit), "agentbox-" and random hex, so that two
// such projects do not share a compose project.
func InitName(dir string, random func() string) string {
	base := filepath.Base(dir)
	if abs, err := filepath.Abs(dir); err == nil {
		base = filepath.Base(abs)
	}
	name := validate.SanitizeProjectName(base)
	if name == config.DefaultName && !strings.Contains(validate.LowerASCII(base), config.DefaultName) {
		name = config.DefaultName + "-" + random()
	}
	return name
}
