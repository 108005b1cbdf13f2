package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/checkmemo"
	"github.com/agentbox-dev/agentbox/internal/settings"
)

// Compiled compiles the project in dir and checks that the generated files
// on disk are what it compiles to; its files are those, in memory. starts
// says that the caller creates or starts containers: every mount source is
// checked again (generator.CheckMounts), as a link can have changed since
// generate.
func Compiled(dir string, starts bool) (*generator.Compiled, error) {
	c, err := generator.Compile(dir, generator.CompileOptions{CheckMounts: starts, Memo: checkmemo.Open()})
	if err != nil {
		return nil, err
	}
	if diff, err := generator.Diff(dir, c.Files); err != nil {
		return nil, err
	} else if diff != "" {
		return nil, errors.New("the generated files are out of date (agentbox generate --check fails); run \"agentbox generate\" and review the diff first")
	}
	return c, nil
}

// CheckProfile returns name, or the default profile when name is empty,
// after checking that cfg has it.
func CheckProfile(cfg *config.Config, name string) (string, error) {
	if name == "" {
		return cfg.DefaultProfile, nil
	}
	if _, ok := cfg.Profile(name); !ok {
		return "", config.ProfileError(cfg, name)
	}
	return name, nil
}

// ErrNoSandbox says that no sandbox of compose project runs, to a command
// that needs one.
func ErrNoSandbox(project string) error {
	return fmt.Errorf("no sandbox runs for this project (compose project %q): start it with \"agentbox up\"", project)
}

// ComposeFile is profile's compose file in dir; a profile that
// agentbox.yaml no longer has (a sandbox started before a change) gets the
// default's, enough to stop it (down removes orphans).
func ComposeFile(dir string, cfg *config.Config, profile string) string {
	if _, ok := cfg.Profile(profile); !ok {
		profile = cfg.DefaultProfile
	}
	return filepath.Join(dir, generator.ProfileCompose(cfg, profile))
}

// ProjectArgv is docker compose on profile's generated file, as cfg's
// project.
func ProjectArgv(docker, dir string, cfg *config.Config, profile string) []string {
	return ComposeArgv(docker, cfg.Name, ComposeFile(dir, cfg, profile))
}

// ProfileOf returns the profile called name, or says that agentbox.yaml
// has none of that name.
func ProfileOf(cfg *config.Config, name string) (*config.Profile, error) {
	p, ok := cfg.Profile(name)
	if !ok {
		return nil, fmt.Errorf("the sandbox runs profile %q, which %s no longer has: restart it (agentbox down, agentbox up)", name, config.ConfigFile)
	}
	return p, nil
}

// ComposeOf is docker compose of argv, in the environment Environ gives
// each compose command.
func ComposeOf(argv []string) Compose {
	return Compose{Docker: Docker{Path: argv[0]}, Argv: argv, Env: Environ}
}

// ComposeWith is ComposeOf with the settings s that the command loaded
// (EnvironWith).
func ComposeWith(argv []string, s settings.Settings) Compose {
	return Compose{Docker: Docker{Path: argv[0]}, Argv: argv, Env: EnvironWith(s)}
}
