package sandbox

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// Removal says what agentbox down removes besides the containers.
type Removal struct {
	Volumes, Images bool
	// Tasks lists the names of the sandbox's tasks that agentbox still
	// records (task.Names), asked only with Volumes or Images: they use its
	// images (Images is refused while there are any), and keep their own
	// volumes.
	Tasks func(project string) ([]string, error)
}

// Down stops and removes the sandbox's containers (docker compose down
// --remove-orphans) and what r asks. Each volume and image removed is
// named on stderr; what could not be removed is returned, one line each
// with docker's reason, once the rest is done.
func Down(ctx context.Context, p *Project, r Removal, stdin io.Reader, stdout, stderr io.Writer) (failed []string, err error) {
	c, name := p.Compose, p.Config.Name
	args := []string{"down", "--remove-orphans"}
	if !r.Volumes && !r.Images {
		return nil, c.Run(ctx, stdin, stdout, stderr, args...)
	}
	tasks, err := r.Tasks(name)
	if err != nil {
		return nil, err
	}
	if err := c.CheckOwner(ctx, name, p.Dir); err != nil {
		return nil, err
	}
	if r.Images && len(tasks) > 0 {
		return nil, fmt.Errorf("not removing anything: tasks %s use the sandbox's images (agentbox stop the running ones, then agentbox rm or gc)", strings.Join(tasks, ", "))
	}
	var before []string
	if r.Volumes {
		if before, err = c.ProjectVolumes(ctx, name); err != nil {
			return nil, err
		}
		args = append(args, "--volumes")
	}
	if err := c.Run(ctx, stdin, stdout, stderr, args...); err != nil {
		return nil, err
	}
	if r.Volumes {
		failed = append(failed, c.removeVolumes(ctx, name, before, stderr)...)
		if len(tasks) > 0 {
			fmt.Fprintf(stderr, "agentbox: %d tasks keep their own volumes (agentbox rm TASK, or gc for the ended ones)\n", len(tasks))
		}
	}
	if r.Images {
		failed = append(failed, c.removeImages(ctx, p.Config, stderr)...)
	}
	return failed, nil
}

// ProjectVolumes are the volumes of compose project name, sorted.
func (d Docker) ProjectVolumes(ctx context.Context, name string) ([]string, error) {
	out, err := d.output(ctx, "volume", "ls", "--quiet", "--filter", "label=com.docker.compose.project="+name)
	if err != nil {
		return nil, fmt.Errorf("listing the volumes of compose project %q: %v", name, err)
	}
	vols := strings.Fields(string(out))
	slices.Sort(vols)
	return vols, nil
}

// removeVolumes removes the volumes of compose project name that docker
// compose down left (before: those there before it), names each one gone
// on w, and returns what could not be removed, with docker's reason.
func (d Docker) removeVolumes(ctx context.Context, name string, before []string, w io.Writer) []string {
	left, err := d.ProjectVolumes(ctx, name)
	if err != nil {
		return []string{err.Error()}
	}
	var failed []string
	kept := map[string]bool{}
	for _, v := range left {
		if out, err := d.combined(ctx, "volume", "rm", v); err != nil {
			kept[v] = true
			failed = append(failed, fmt.Sprintf("volume %s not removed: %s", esc(v), esc(FirstLine(out, err))))
		}
	}
	removed := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(before), left...))))
	for _, v := range removed {
		if !kept[v] {
			fmt.Fprintf(w, "agentbox: removed volume %s\n", esc(v))
		}
	}
	if len(removed) == 0 {
		fmt.Fprintf(w, "agentbox: the sandbox has no volumes\n")
	}
	return failed
}

// Images are the local tags of the sandbox's images: NAME-egress and
// NAME-agent as compose built them, every other tag of those images, and
// the tags of build --push (kubernetes.registry/NAME-egress:TAG).
func (d Docker) Images(ctx context.Context, cfg *config.Config) []string {
	var tags []string
	for _, img := range []string{cfg.Name + "-egress", cfg.Name + "-agent"} {
		if out, err := d.output(ctx, "image", "inspect", "--format", "{{range .RepoTags}}{{println .}}{{end}}", img); err == nil {
			tags = append(tags, strings.Fields(string(out))...)
		}
		if cfg.Kubernetes != nil {
			out, err := d.output(ctx, "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", cfg.Kubernetes.Registry+"/"+img)
			if err == nil {
				tags = append(tags, strings.Fields(string(out))...)
			}
		}
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}

// removeImages removes the sandbox's images (never forced), names each tag
// removed on w, and returns what could not be removed, with docker's
// reason.
func (d Docker) removeImages(ctx context.Context, cfg *config.Config, w io.Writer) []string {
	tags := d.Images(ctx, cfg)
	if len(tags) == 0 {
		fmt.Fprintf(w, "agentbox: the sandbox has no images (%s-egress, %s-agent)\n", cfg.Name, cfg.Name)
		return nil
	}
	var failed []string
	for _, t := range tags {
		if out, err := d.combined(ctx, "rmi", t); err != nil {
			failed = append(failed, fmt.Sprintf("image %s not removed: %s", esc(t), esc(FirstLine(out, err))))
			continue
		}
		fmt.Fprintf(w, "agentbox: removed image %s\n", esc(t))
	}
	return failed
}

// esc escapes text docker or the agent controls for the terminal.
func esc(s string) string { return termsafe.String(s) }
