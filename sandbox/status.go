package sandbox

import (
	"context"
	"path/filepath"
	"time"
)

// Status is the sandbox of a project as agentbox status reports it
// (--json: these fields, in docs/cli.md); the command adds the grants and
// the tasks.
type Status struct {
	Sandbox string `json:"sandbox"` // the compose project
	Dir     string `json:"dir"`     // the project's directory, absolute
	Up      bool   `json:"up"`      // egress and agent both run
	// State is "up", "down" (no container), or each service's docker
	// state when only some run.
	State   string    `json:"state"`
	Profile string    `json:"profile,omitempty"`
	Since   time.Time `json:"since,omitzero"` // when the later of egress and agent started
	// Files is "current" when the generated files are what agentbox.yaml
	// compiles to, "out of date", or why it cannot tell (FilesState).
	Files string `json:"generated_files"`
	// Matches says whether the running sandbox was started (by agentbox
	// up) from the generated files as they are now; null when it cannot
	// tell (not up, started otherwise, or recreated since; Matches).
	Matches *bool `json:"running_matches_files"`
}

// StatusOf reads the status of the sandbox of the project in dir: its
// agentbox.yaml, its generated files, and its containers as containers
// lists them (ContainersOf; tests pass their own).
func StatusOf(ctx context.Context, dir string, containers func(ctx context.Context, project string) ([]Container, error)) (*Status, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	s := &Status{Sandbox: cfg.Name, Dir: dir, Files: FilesState(dir)}
	if abs, err := filepath.Abs(dir); err == nil {
		s.Dir = abs
	}
	cs, err := containers(ctx, cfg.Name)
	if err != nil {
		return nil, err
	}
	st := StateOf(cs)
	s.Up, s.State, s.Profile, s.Since = st.Up, st.Words, st.Profile, st.Since
	if s.Up {
		s.Matches = Matches(dir, cfg.Name, st.Egress)
	}
	return s, nil
}

// ContainersOf lists the containers of compose project name
// (Docker.Containers), after checking that Docker is there.
func ContainersOf(ctx context.Context, name string) ([]Container, error) {
	d, err := Check(ctx)
	if err != nil {
		return nil, err
	}
	return d.Containers(ctx, name)
}
