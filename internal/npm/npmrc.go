package npm

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	files := []string{filepath.Join(dir, ".npmrc")}
	user := getenv("NPM_CONFIG_USERCONFIG")
	if user == "" {
		user = getenv("npm_config_userconfig")
	}
	if user == "" && getenv("HOME") != "" {
		user = filepath.Join(getenv("HOME"), ".npmrc")
	}
	if user != "" {
		files = append(files, user)
	}
	for _, f := range files {
		if v := npmrcRegistry(f, getenv); v != "" {
			return v
		}
	}
	return "" // npm's own default: asked of npm when needed
}

// npmrcRegistry returns the top-level registry= of an .npmrc, or "". The
// syntax is npm's ini: "#" and ";" start comments (also after an unquoted
// value), spaces around "=" are ignored, values may be quoted and may name
// environment variables as ${NAME}; the last assignment wins.
func npmrcRegistry(file string, getenv func(string) string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	found := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			break // keys after a [section] are not top-level
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "registry" {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		} else if i := strings.IndexAny(v, "#;"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		found = envRef.ReplaceAllStringFunc(v, func(m string) string { return getenv(m[2 : len(m)-1]) })
	}
	return found
}
