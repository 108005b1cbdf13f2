package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/spf13/cobra"
)

func newBuildCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	var push bool
	c := &cobra.Command{
		Use:   "build [--push]",
		Short: "Build the sandbox's two images; --push also pushes them to kubernetes.registry for the cluster",
		Long: `Build NAME-egress and NAME-agent from the generated files (docker compose
build). With --push, tag them REGISTRY/NAME-egress:TAG and REGISTRY/NAME-agent:TAG
(kubernetes.registry; TAG is a digest of the generated files they are built
from, the tag .agentbox/kubernetes/ names) and push them; agentbox run --on
kubernetes runs them by the digests the registry then holds. Prints each
pushed reference with its digest.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return buildImages(c.Context(), *dir, push, stdout, stderr)
		},
	}
	c.Flags().BoolVar(&push, "push", false, "tag and push the images to kubernetes.registry")
	return c
}

func buildImages(ctx context.Context, dir string, push bool, stdout, stderr io.Writer) error {
	refs, err := sandbox.Build(ctx, dir, push, stderr)
	for _, ref := range refs {
		fmt.Fprintln(stdout, ref)
	}
	return sandboxErr(err)
}
