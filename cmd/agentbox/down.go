package main

// agentbox down: stop and remove the sandbox's containers; --volumes and
// --images remove what outlives them, naming each thing removed.

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
	"github.com/spf13/cobra"
)

func newDownCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	r := sandbox.Removal{Tasks: recordedTasks}
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
			return down(c.Context(), *dir, r, stdout, stderr)
		},
	}
	c.Flags().BoolVar(&r.Volumes, "volumes", false, "also remove the sandbox's volumes: the agent's clone and its state")
	c.Flags().BoolVar(&r.Images, "images", false, "also remove the sandbox's images (refused while it has tasks)")
	return c
}

// down stops and removes the sandbox in dir, and what r asks
// (sandbox.Down); what docker could not remove fails it.
func down(ctx context.Context, dir string, r sandbox.Removal, stdout, stderr io.Writer) error {
	p, err := openSandbox(ctx, sandbox.Want{Dir: dir})
	if err != nil {
		return err
	}
	failed, err := sandbox.Down(ctx, p, r, os.Stdin, stdout, stderr)
	if err != nil {
		return sandboxErr(err)
	}
	if len(failed) > 0 {
		return &exitErr{exitError, errors.New(strings.Join(failed, "\n"))}
	}
	return nil
}

// recordedTasks names the tasks of project that agentbox records
// (sandbox.Removal.Tasks); an error fails down.
func recordedTasks(project string) ([]string, error) {
	recs, err := task.List(project)
	names := make([]string, 0, len(recs))
	for _, r := range recs {
		names = append(names, r.Name)
	}
	return names, err
}
