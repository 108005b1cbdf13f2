package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
)

// ContainerState is what docker says of one container of a compose
// project.
type ContainerState struct {
	ID       string
	Running  bool
	ExitCode int
	Status   string
	Finished time.Time // zero while it runs
}

// ServiceState inspects project's container of service; nil when there is
// none.
func (d Docker) ServiceState(ctx context.Context, project, service string) (*ContainerState, error) {
	out, err := d.output(ctx, "ps", "-aq", "--no-trunc",
		"--filter", "label=com.docker.compose.project="+project,
		"--filter", "label=com.docker.compose.service="+service)
	if err != nil {
		return nil, fmt.Errorf("docker ps: %v", err)
	}
	id := strings.TrimSpace(string(out))
	if id == "" {
		return nil, nil
	}
	id, _, _ = strings.Cut(id, "\n")
	out, err = d.output(ctx, "inspect", "--format", "{{.State.Running}} {{.State.ExitCode}} {{.State.Status}} {{.State.FinishedAt}}", id)
	if err != nil {
		return nil, fmt.Errorf("docker inspect: %v", err)
	}
	s := ContainerState{ID: id}
	var running, finished string
	if _, err := fmt.Sscan(string(out), &running, &s.ExitCode, &s.Status, &finished); err != nil {
		return nil, fmt.Errorf("docker inspect %s: %q", id, out)
	}
	s.Running = running == "true"
	if t, err := time.Parse(time.RFC3339Nano, finished); err == nil && !s.Running && t.Year() > 1 {
		s.Finished = t
	}
	return &s, nil
}

// LabelledProfile is the profile of project's running sandbox, as its
// egress container's label says (none: balanced); "" when none runs.
func (d Docker) LabelledProfile(ctx context.Context, project string) (string, error) {
	out, err := d.output(ctx, "ps",
		"--filter", "label=com.docker.compose.project="+project,
		"--filter", "label=com.docker.compose.service=egress",
		"--format", `{{.ID}} {{.Label "`+generator.ProfileLabel+`"}}`)
	if err != nil {
		return "", fmt.Errorf("listing the egress container of compose project %q: %v", project, err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return "", nil
	}
	_, profile, _ := strings.Cut(line, " ")
	if profile == "" {
		return config.ProfileBalanced, nil
	}
	return profile, nil
}

// CheckOwner refuses to start when containers of the compose project name
// belong to another project directory than dir: two projects that share a
// name (for one, neither sets name:, and both get the default) would share
// their containers and volumes.
func (d Docker) CheckOwner(ctx context.Context, name, dir string) error {
	out, err := d.output(ctx, "ps", "-a", "--filter", "label=com.docker.compose.project="+name,
		"--format", `{{.Label "com.docker.compose.project.working_dir"}}`)
	if err != nil {
		return fmt.Errorf("listing the containers of compose project %q: %v", name, err)
	}
	ours, err := filepath.Abs(filepath.Join(dir, generator.OutDir))
	if err != nil {
		return err
	}
	for _, wd := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if wd == "" || samePath(wd, ours) || samePath(wd, filepath.Join(ours, filepath.Base(generator.ProfilesDir))) {
			continue
		}
		return fmt.Errorf("the compose project %q belongs to another project (%s): give this one a name of its own in %s (name: ...)", name, filepath.Dir(wd), config.ConfigFile)
	}
	return nil
}

func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// RemoveProjectVolumes removes the volumes of compose project.
func (d Docker) RemoveProjectVolumes(ctx context.Context, project string) error {
	out, err := d.output(ctx, "volume", "ls", "--quiet", "--filter", "label=com.docker.compose.project="+project)
	if err != nil {
		return fmt.Errorf("listing the volumes of %s: %v", project, err)
	}
	vols := strings.Fields(string(out))
	if len(vols) == 0 {
		return nil
	}
	var all bytes.Buffer
	if err := d.runner().Run(ctx, Cmd{Args: append([]string{d.Path, "volume", "rm"}, vols...), Stdout: &all, Stderr: &all}); err != nil {
		return fmt.Errorf("removing the volumes of %s: %s", project, FirstLine(all.Bytes(), err))
	}
	return nil
}
