package settings

import "github.com/agentbox-dev/agentbox/internal/npm"

// NPMRegistry is the npm registry in use for dir: the settings', else
// npm's configuration as dir sees it ("" : the working directory).
func (s Settings) NPMRegistry(dir string, getenv func(string) string) string {
	if s.NPM.Registry != "" {
		return s.NPM.Registry
	}
	return npm.RegistryFromConfig(dir, getenv)
}
