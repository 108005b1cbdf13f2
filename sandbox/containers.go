package sandbox

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
)

// Container is what agentbox status needs of one container of a compose
// project.
type Container struct {
	ID      string
	Service string
	Running bool
	Status  string // docker's: running, exited, restarting...
	Started time.Time
	Profile string // the profile label; "" when it has none
}

// Containers are the containers of compose project name, as docker
// inspect sees them.
func (d Docker) Containers(ctx context.Context, name string) ([]Container, error) {
	out, err := d.output(ctx, "ps", "-aq", "--no-trunc", "--filter", "label=com.docker.compose.project="+name)
	if err != nil {
		return nil, fmt.Errorf("listing the containers of compose project %q: %v", name, err)
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return nil, nil
	}
	format := `{{.Id}}	{{index .Config.Labels "com.docker.compose.service"}}	{{.State.Running}}	{{.State.Status}}	{{.State.StartedAt}}	{{index .Config.Labels "` + generator.ProfileLabel + `"}}`
	out, err = d.output(ctx, append([]string{"inspect", "--format", format}, ids...)...)
	if err != nil {
		return nil, fmt.Errorf("docker inspect: %v", err)
	}
	return parseContainers(string(out))
}

// parseContainers reads Containers' docker inspect lines.
func parseContainers(out string) ([]Container, error) {
	var cs []Container
	for _, line := range strings.Split(out, "\n") {
		// Not trimmed: an empty label is an empty last field.
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			return nil, fmt.Errorf("docker inspect: unexpected line %q", line)
		}
		c := Container{ID: f[0], Service: f[1], Running: f[2] == "true", Status: f[3], Profile: f[5]}
		if t, err := time.Parse(time.RFC3339Nano, f[4]); err == nil {
			c.Started = t
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// State is the state of a sandbox, read from its containers.
type State struct {
	Up bool // egress and agent both run
	// Words is "up", "down" (no container), or each service's docker
	// state when only some run.
	Words   string
	Profile string    // the running egress's (no label: balanced)
	Since   time.Time // when the later of egress and agent started; zero unless Up
	Egress  string    // the running egress container's id
}

// StateOf reads the sandbox's state from its containers.
func StateOf(cs []Container) State {
	var s State
	var states []string
	up := 0
	for _, c := range cs {
		if c.Service != "egress" && c.Service != "agent" {
			continue
		}
		states = append(states, c.Service+" "+c.Status)
		if !c.Running {
			continue
		}
		up++
		if c.Started.After(s.Since) {
			s.Since = c.Started
		}
		if c.Service == "egress" {
			s.Egress = c.ID
			s.Profile = cmp.Or(c.Profile, config.ProfileBalanced)
		}
	}
	switch {
	case len(states) == 0:
		s.Words = "down"
	case up == 2 && len(states) == 2:
		s.Up, s.Words = true, "up"
	default:
		s.Words = strings.Join(states, ", ")
	}
	if !s.Up {
		s.Since = time.Time{}
	}
	return s
}

// FilesState says whether the generated files in dir are what
// agentbox.yaml compiles to: "current", "out of date", or why it cannot
// tell.
func FilesState(dir string) string {
	c, err := generator.Compile(dir, generator.CompileOptions{})
	if err != nil {
		return "cannot tell: " + err.Error()
	}
	diff, err := generator.Diff(dir, c.Files)
	switch {
	case err != nil:
		return "cannot tell: " + err.Error()
	case diff != "":
		return "out of date"
	}
	return "current"
}

// Matches says whether the running sandbox of project in dir, whose
// egress container is egress, was started by agentbox up from the
// generated files as they are now; nil when it cannot tell (started
// otherwise, or recreated since).
func Matches(dir, project, egress string) *bool {
	rec, _ := ReadUpRecord(dir, project)
	if rec == nil || rec.Egress != egress {
		return nil
	}
	sum, err := FilesHash(dir)
	matches := err == nil && sum == rec.Files
	return &matches
}

// RunningProfile is the profile of the running sandbox of project (task
// "") or of its task: an error says that none runs.
func (d Docker) RunningProfile(ctx context.Context, project, task string) (string, error) {
	if task != "" {
		project = generator.TaskProject(project, task)
	}
	p, err := d.LabelledProfile(ctx, project)
	switch {
	case err == nil && p == "" && task == "":
		err = ErrNoSandbox(project)
	case err == nil && p == "":
		err = fmt.Errorf("task %s has no egress container running (agentbox ps lists the tasks)", task)
	}
	return p, err
}

// LoadConfig loads agentbox.yaml in dir, without compiling it further:
// enough to name the sandbox and its tasks.
func LoadConfig(dir string) (*config.Config, error) {
	c, err := generator.Compile(dir, generator.CompileOptions{Until: generator.Loaded})
	if err != nil {
		return nil, err
	}
	return c.Config, nil
}

// ProfileIn is the profile that the running sandbox of the project in dir
// (task "") or one of its tasks runs.
func ProfileIn(ctx context.Context, dir, task string) (string, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return "", err
	}
	d, err := Check(ctx)
	if err != nil {
		return "", err
	}
	return d.RunningProfile(ctx, cfg.Name, task)
}
