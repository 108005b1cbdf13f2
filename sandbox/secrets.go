package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/validate"
)

// The user's secrets file: NAME=VALUE lines that agentbox adds to the
// environment of docker compose, for the names agentbox.yaml lists in
// secrets (the sandbox and every task) and run.env (tasks). It lives
// outside every repository, and its values are written nowhere: the
// compose files name the variables without a value, and compose takes
// each from its own environment when it creates the container.

// SecretsFileName is the file's name in agentbox's configuration directory.
const SecretsFileName = "secrets.env"

// steeringPrefixes start the names a secrets file may not set: they steer
// agentbox, docker compose, the docker CLI or the image builds, not the
// agent.
var steeringPrefixes = []string{"AGENTBOX_", "COMPOSE_", "DOCKER_", "NPM_CONFIG_"}

// SecretsPath is the secrets file of this user:
// $XDG_CONFIG_HOME/agentbox/secrets.env, ~/.config/agentbox/secrets.env
// when XDG_CONFIG_HOME is not set; "" without a home directory.
func SecretsPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "agentbox", SecretsFileName)
}

// ReadSecrets reads a secrets file; a file that does not exist holds
// nothing. It refuses a file that is a link, not a regular file, not the
// user's own, or open to the group or others (mode 0600 or stricter).
func ReadSecrets(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("secrets file: %w", err)
	}
	switch uid, ok := OwnerUID(fi); {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("secrets file %s is a symbolic link; agentbox reads only a regular file of your own", path)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("secrets file %s is not a regular file", path)
	case ok && uid != os.Getuid():
		return nil, fmt.Errorf("secrets file %s belongs to uid %d, not to you (uid %d)", path, uid, os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("secrets file %s is open to others (mode %04o); run: chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("secrets file: %w", err)
	}
	defer f.Close()
	return ParseSecrets(path, f)
}

// ParseSecrets reads NAME=VALUE lines: the value is the rest of the line,
// as it is (no quotes, no expansion); blank lines and lines starting with
// # are skipped.
func ParseSecrets(path string, r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want NAME=VALUE", path, n)
		}
		if err := validate.EnvName(name); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if slices.ContainsFunc(steeringPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			return nil, fmt.Errorf("%s:%d: %s: names starting with %s steer agentbox, compose, docker or the builds, not the agent; set them in your environment", path, n, name, strings.Join(steeringPrefixes, ", "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s is set twice", path, n, name)
		}
		if strings.ContainsRune(value, 0) {
			return nil, fmt.Errorf("%s:%d: %s: the value holds a NUL byte", path, n, name)
		}
		out[name] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// WithSecrets adds the secrets file's variables to environ, except those
// environ sets: your environment wins over the file.
func WithSecrets(environ []string, secrets map[string]string) []string {
	set := map[string]bool{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	out := slices.Clone(environ)
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		if !set[name] {
			out = append(out, name+"="+secrets[name])
		}
	}
	return out
}

// MissingSecrets returns the names that environ does not set.
func MissingSecrets(environ []string, names []string) []string {
	set := map[string]bool{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	var out []string
	for _, n := range names {
		if !set[n] {
			out = append(out, n)
		}
	}
	return out
}

// WarnMissingSecrets says on stderr which of names neither the environment
// nor the secrets file sets: the agent starts without them. environ is
// Environ, or EnvironWith the command's settings.
func WarnMissingSecrets(stderr io.Writer, environ func(command string) ([]string, error), names []string) {
	env, err := environ("up")
	if err != nil {
		return // the compose call that follows reports it
	}
	if miss := MissingSecrets(env, names); len(miss) > 0 {
		fmt.Fprintf(stderr, "agentbox: not set in your environment nor in your secrets file, so the agent goes without: %s\n", strings.Join(miss, ", "))
	}
}
