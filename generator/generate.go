package generator

import (
	"fmt"

	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// The pipeline's entry points: load, plan, render and check in one call.

// Build compiles dir/agentbox.yaml and dir/agentbox.lock into the files of the
// sandbox, and checks each with its ecosystem's parser and every path the
// sandbox mounts (CheckMounts). It writes nothing.
func Build(dir string) (map[string][]byte, error) {
	cfg, files, err := Compile(dir)
	if err != nil {
		return nil, err
	}
	if err := CheckMounts(dir, cfg); err != nil {
		return nil, err
	}
	return files, nil
}

// Compile is Build without CheckMounts that also returns the configuration
// it compiled, for callers that need both without loading agentbox.yaml
// twice. Commands that start the sandbox call CheckMounts themselves; those
// that only stop or inspect it (down, logs) must work whatever links the
// agent left behind.
func Compile(dir string) (*Config, map[string][]byte, error) {
	cfg, lock, err := loadProject(dir)
	if err != nil {
		return nil, nil, err
	}
	files, err := compile(dir, cfg, lock)
	return cfg, files, err
}

// compile plans, renders and checks cfg with lock.
func compile(dir string, cfg *Config, lock *images.Lock) (map[string][]byte, error) {
	errs := &yamlpos.Errors{File: displayPath(dir, ConfigFile)}
	p := plan(cfg, lock, errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	files, err := render(p)
	if err != nil {
		return nil, fmt.Errorf("internal error (please report it): %w", err)
	}
	if err := check(files, dir, p.Name); err != nil {
		return nil, fmt.Errorf("internal error: a generated file failed its check (please report it): %w", err)
	}
	return files, nil
}
