package generator

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/atomicfile"
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

// WriteInit writes agentbox init's file (InitFile) for agent and ide in
// the project directory dir, which must exist: init does not create it
// (nor its parents) for a mistyped -C. An existing agentbox.yaml is
// overwritten only with force. It returns the file's path.
func WriteInit(dir, agent, ide string, force bool) (string, error) {
	if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("-C %s: no such directory; create the project directory first", dir)
	} else if errors.Is(err, syscall.ENOTDIR) || err == nil && !fi.IsDir() {
		return "", fmt.Errorf("-C %s: not a directory", dir)
	} else if err != nil {
		return "", err
	}
	path := ConfigPath(dir)
	if _, err := os.Stat(path); err == nil && !force {
		return "", fmt.Errorf("%s already exists; use --force to overwrite it", path)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	data, err := InitFile(dir, InitName(dir, randomHex), agent, ide)
	if err != nil {
		return "", err
	}
	if _, err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// randomHex returns 6 random hex digits.
func randomHex() string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
