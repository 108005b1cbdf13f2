package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/settings"
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
	c, err := generator.Compile(dir, generator.CompileOptions{})
	if err != nil {
		return err
	}
	if diff, err := generator.Diff(dir, c.Files); err != nil {
		return err
	} else if diff != "" {
		return errors.New("the generated files are out of date (agentbox generate --check fails); run \"agentbox generate\" and review the diff first")
	}
	cfg := c.Config
	if push && cfg.Kubernetes == nil {
		return errors.New("agentbox.yaml has no kubernetes section: --push needs kubernetes.registry")
	}
	docker, err := checkDocker(ctx)
	if err != nil {
		return err
	}
	us, err := settings.LoadUser(os.Getenv) // once: the CA file and the build
	if err != nil {
		return err
	}
	if err := sandbox.WriteLocalCA(dir, us); err != nil {
		return err
	}
	if err := sandbox.PullBases(ctx, docker, dir, stderr); err != nil {
		return err
	}
	if err := execComposeOf(ctx, sandbox.ComposeWith(sandbox.ProjectArgv(docker, dir, cfg, cfg.DefaultProfile), us), nil, stderr, stderr, "build"); err != nil {
		return fmt.Errorf("docker compose build: %w", err)
	}
	if !push {
		return nil
	}
	tag := generator.ImageTag(c.Files)
	for _, img := range []string{cfg.Name + "-egress", cfg.Name + "-agent"} {
		repo := cfg.Kubernetes.Registry + "/" + img
		ref, err := pushImage(ctx, docker, img, repo, tag, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, ref)
	}
	return nil
}

// pushImage tags img as repo:tag, pushes it and returns repo:tag@digest.
func pushImage(ctx context.Context, docker, img, repo, tag string, stderr io.Writer) (string, error) {
	if out, err := exec.CommandContext(ctx, docker, "tag", img, repo+":"+tag).CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker tag %s: %s", img, sandbox.FirstLine(out, err))
	}
	push := exec.CommandContext(ctx, docker, "push", repo+":"+tag)
	push.Stdout, push.Stderr = stderr, stderr
	if err := push.Run(); err != nil {
		return "", fmt.Errorf("docker push %s:%s: %w", repo, tag, err)
	}
	out, err := exec.CommandContext(ctx, docker, "image", "inspect", "--format", "{{range .RepoDigests}}{{println .}}{{end}}", repo+":"+tag).Output()
	if err != nil {
		return "", fmt.Errorf("docker image inspect %s:%s: %w", repo, tag, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if d, ok := strings.CutPrefix(l, repo+"@"); ok {
			return repo + ":" + tag + "@" + d, nil
		}
	}
	return "", fmt.Errorf("docker has no digest of %s:%s after the push", repo, tag)
}
