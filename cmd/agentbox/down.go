package main

// agentbox down: stop and remove the sandbox's containers; --volumes and
// --images remove what outlives them, naming each thing removed.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
	"github.com/spf13/cobra"
)

type downOptions struct {
	sandboxOptions
	volumes, images bool
}

func newDownCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	o := &downOptions{}
	c := &cobra.Command{
		Use:   "down [--volumes] [--images]",
		Short: "Stop and remove the sandbox's containers (its volumes and images stay unless asked)",
		Long: `Stop and remove the containers of the running profile (docker compose down
--remove-orphans). What outlives them stays unless asked:

  --volumes  removes every volume of the sandbox's compose project: the agent's
             clone (commits not fetched are lost) and its state (credentials:
             log in again), and any other profile's
  --images   removes the sandbox's two images (NAME-egress, NAME-agent, which
             tasks share) and their local tags from agentbox build --push;
             refused while agentbox has a task of this sandbox (stop it, then
             agentbox rm or gc)

Each volume and image removed is named on stderr; one that cannot be removed
(in use) is named with docker's reason, and down exits 1. Tasks keep their
own volumes (agentbox rm and gc remove them).`,
		Example: `  agentbox down
  agentbox down --volumes            # start afresh: a new clone, a new login
  agentbox down --volumes --images   # leave nothing of the sandbox behind`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(c.Context(), stdout, stderr)
		},
	}
	c.Flags().BoolVar(&o.volumes, "volumes", false, "also remove the sandbox's volumes: the agent's clone and its state")
	c.Flags().BoolVar(&o.images, "images", false, "also remove the sandbox's images (refused while it has tasks)")
	return c
}

func (o *downOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	argv, cfg, err := o.compose(ctx, false)
	if err != nil {
		return err
	}
	docker := argv[0]
	args := []string{"down", "--remove-orphans"}
	if !o.volumes && !o.images {
		return execCompose(ctx, argv, os.Stdin, stdout, stderr, args...)
	}
	if err := (sandbox.Docker{Path: docker}).CheckOwner(ctx, cfg.Name, o.dir); err != nil {
		return err
	}
	tasks, err := task.List(cfg.Name)
	if err != nil {
		return err
	}
	if o.images && len(tasks) > 0 {
		var names []string
		for _, t := range tasks {
			names = append(names, t.Name)
		}
		return fmt.Errorf("not removing anything: tasks %s use the sandbox's images (agentbox stop the running ones, then agentbox rm or gc)", strings.Join(names, ", "))
	}
	var before []string
	if o.volumes {
		if before, err = projectVolumes(ctx, docker, cfg.Name); err != nil {
			return err
		}
		args = append(args, "--volumes")
	}
	if err := execCompose(ctx, argv, os.Stdin, stdout, stderr, args...); err != nil {
		return err
	}
	var failed []string
	if o.volumes {
		failed = append(failed, removeVolumes(ctx, docker, cfg.Name, before, stderr)...)
		if len(tasks) > 0 {
			fmt.Fprintf(stderr, "agentbox: %d tasks keep their own volumes (agentbox rm TASK, or gc for the ended ones)\n", len(tasks))
		}
	}
	if o.images {
		failed = append(failed, removeImages(ctx, docker, cfg, stderr)...)
	}
	if len(failed) > 0 {
		return &exitErr{exitError, errors.New(strings.Join(failed, "\n"))}
	}
	return nil
}

// projectVolumes are the volumes of compose project name, sorted.
func projectVolumes(ctx context.Context, docker, name string) ([]string, error) {
	out, err := exec.CommandContext(ctx, docker, "volume", "ls", "--quiet", "--filter", "label=com.docker.compose.project="+name).Output()
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
func removeVolumes(ctx context.Context, docker, name string, before []string, w io.Writer) []string {
	left, err := projectVolumes(ctx, docker, name)
	if err != nil {
		return []string{err.Error()}
	}
	var failed []string
	kept := map[string]bool{}
	for _, v := range left {
		if out, err := exec.CommandContext(ctx, docker, "volume", "rm", v).CombinedOutput(); err != nil {
			kept[v] = true
			failed = append(failed, fmt.Sprintf("volume %s not removed: %s", esc(v), esc(sandbox.FirstLine(out, err))))
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

// sandboxImages are the local tags of the sandbox's images: NAME-egress and
// NAME-agent as compose built them, every other tag of those images, and
// the tags of build --push (kubernetes.registry/NAME-egress:TAG).
func sandboxImages(ctx context.Context, docker string, cfg *config.Config) []string {
	var tags []string
	for _, img := range []string{cfg.Name + "-egress", cfg.Name + "-agent"} {
		if out, err := exec.CommandContext(ctx, docker, "image", "inspect", "--format", "{{range .RepoTags}}{{println .}}{{end}}", img).Output(); err == nil {
			tags = append(tags, strings.Fields(string(out))...)
		}
		if cfg.Kubernetes != nil {
			out, err := exec.CommandContext(ctx, docker, "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", cfg.Kubernetes.Registry+"/"+img).Output()
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
func removeImages(ctx context.Context, docker string, cfg *config.Config, w io.Writer) []string {
	tags := sandboxImages(ctx, docker, cfg)
	if len(tags) == 0 {
		fmt.Fprintf(w, "agentbox: the sandbox has no images (%s-egress, %s-agent)\n", cfg.Name, cfg.Name)
		return nil
	}
	var failed []string
	for _, t := range tags {
		if out, err := exec.CommandContext(ctx, docker, "rmi", t).CombinedOutput(); err != nil {
			failed = append(failed, fmt.Sprintf("image %s not removed: %s", esc(t), esc(sandbox.FirstLine(out, err))))
			continue
		}
		fmt.Fprintf(w, "agentbox: removed image %s\n", esc(t))
	}
	return failed
}
