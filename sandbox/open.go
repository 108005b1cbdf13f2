package sandbox

import (
	"context"

	"github.com/agentbox-dev/agentbox/config"
)

// Want says which sandbox a command opens, and what it needs of it.
type Want struct {
	Dir string
	// Choose says that the command chooses the profile (up): Profile, or
	// the default when it is empty. Otherwise Profile is the running
	// sandbox's, from its egress container's label.
	Choose  bool
	Profile string
	// Running says that the command needs the sandbox running (shell,
	// verify, fetch, allow): without it, Open says so and names agentbox up.
	Running bool
	// Starts says that the command creates or starts containers (up,
	// verify): every mount source is checked again (generator.CheckMounts),
	// as a link can have changed since generate. down, shell and logs do
	// not, so that the sandbox can always be stopped, whatever the agent
	// did to the project.
	Starts bool
}

// Project is the sandbox of a project as a command opened it: its
// configuration, its profile and docker compose on its generated files.
type Project struct {
	Dir     string
	Config  *config.Config
	Profile string
	Compose Compose
	Files   map[string][]byte // the generated files (generator.Compiled)
}

// ProfileChoiceError says that the profile a command chose is not one of
// the project's.
type ProfileChoiceError struct{ Err error }

func (e *ProfileChoiceError) Error() string { return e.Err.Error() }
func (e *ProfileChoiceError) Unwrap() error { return e.Err }

// Open checks that the generated files in w.Dir are current and that
// Docker, compose v2 and the daemon are there, and returns the project's
// sandbox. The project comes first, so that a mistake in agentbox.yaml is
// not hidden behind a missing daemon.
func Open(ctx context.Context, w Want) (*Project, error) {
	c, err := Compiled(w.Dir, w.Starts)
	if err != nil {
		return nil, err
	}
	cfg := c.Config
	profile := w.Profile
	if w.Choose {
		if profile, err = CheckProfile(cfg, profile); err != nil {
			return nil, &ProfileChoiceError{err}
		}
	}
	d, err := Check(ctx)
	if err != nil {
		return nil, err
	}
	if profile == "" {
		if profile, err = d.LabelledProfile(ctx, cfg.Name); err != nil {
			return nil, err
		}
		switch {
		case profile == "" && w.Running:
			return nil, ErrNoSandbox(cfg.Name)
		case profile == "":
			profile = cfg.DefaultProfile
		}
	}
	return &Project{Dir: w.Dir, Config: cfg, Profile: profile, Files: c.Files,
		Compose: ComposeOf(ProjectArgv(d.Path, w.Dir, cfg, profile))}, nil
}
