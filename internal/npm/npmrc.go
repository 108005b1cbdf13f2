package npm

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
)

// envRef is an environment variable named in an .npmrc value.
var envRef = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// ConfigGet asks npm for its registry (`npm config get registry`): npm
// knows its own default and its global configuration.
func ConfigGet(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "npm", "config", "get", "registry").Output()
	return strings.TrimSpace(string(out)), err
}

// RegistryFromConfig follows npm's own configuration: the
// NPM_CONFIG_REGISTRY (or npm_config_registry) environment variable, else
// `registry=` in the project's .npmrc (dir/.npmrc), else in $HOME/.npmrc
// (or the file NPM_CONFIG_USERCONFIG names), else "": then the client asks
// npm itself for its default. getenv is os.Getenv in production, a map in tests.
func RegistryFromConfig(dir string, getenv func(string) string) string {
	for _, k := range []string{"NPM_CONFIG_REGISTRY", "npm_config_registry"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
	}
	for _, f := range npmrcFiles(dir, getenv) {
		if v := npmrcValues(f, getenv)["registry"]; v != "" {
			return v
		}
	}
	return "" // npm's own default: asked of npm when needed
}
