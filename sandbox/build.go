package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/settings"
)

// Build builds the sandbox's two images from the generated files in dir
// (docker compose build; agentbox build), docker's output on stderr. With
// push it also tags them REGISTRY/NAME-egress:TAG and REGISTRY/NAME-agent:TAG
// (kubernetes.registry; TAG a digest of the generated files) and pushes
// them, and returns the references pushed, with their digests (those
// pushed before a failure too).
func Build(ctx context.Context, dir string, push bool, stderr io.Writer) ([]string, error) {
	c, err := Compiled(dir, false)
	if err != nil {
		return nil, err
	}
	cfg := c.Config
	if push && cfg.Kubernetes == nil {
		return nil, errors.New("agentbox.yaml has no kubernetes section: --push needs kubernetes.registry")
	}
	d, err := Check(ctx)
	if err != nil {
		return nil, err
	}
	us, err := settings.LoadUser(os.Getenv) // once: the CA file and the build
	if err != nil {
		return nil, err
	}
	if err := WriteLocalCA(dir, us); err != nil {
		return nil, err
	}
	if err := WriteLocalProgram(dir, c.Files); err != nil {
		return nil, err
	}
	if err := d.PullBases(ctx, dir, stderr); err != nil {
		return nil, err
	}
	compose := ComposeWith(ProjectArgv(d.Path, dir, cfg, cfg.DefaultProfile), us)
	if err := compose.Run(ctx, nil, stderr, stderr, "build"); err != nil {
		if ee := (*ExitError)(nil); errors.As(err, &ee) {
			return nil, err
		}
		return nil, fmt.Errorf("docker compose build: %w", err)
	}
	if !push {
		return nil, nil
	}
	tag := generator.ImageTag(c.Files)
	var refs []string
	for _, img := range []string{cfg.Name + "-egress", cfg.Name + "-agent"} {
		ref, err := d.Push(ctx, img, cfg.Kubernetes.Registry+"/"+img, tag, stderr)
		if err != nil {
			return refs, err
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// Push tags img as repo:tag, pushes it (docker's output on stderr) and
// returns repo:tag@digest.
func (d Docker) Push(ctx context.Context, img, repo, tag string, stderr io.Writer) (string, error) {
	if out, err := d.combined(ctx, "tag", img, repo+":"+tag); err != nil {
		return "", fmt.Errorf("docker tag %s: %s", img, FirstLine(out, err))
	}
	if err := d.runner().Run(ctx, Cmd{Args: []string{d.Path, "push", repo + ":" + tag}, Stdout: stderr, Stderr: stderr}); err != nil {
		return "", fmt.Errorf("docker push %s:%s: %w", repo, tag, err)
	}
	out, err := d.output(ctx, "image", "inspect", "--format", "{{range .RepoDigests}}{{println .}}{{end}}", repo+":"+tag)
	if err != nil {
		return "", fmt.Errorf("docker image inspect %s:%s: %w", repo, tag, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if dg, ok := strings.CutPrefix(l, repo+"@"); ok {
			return repo + ":" + tag + "@" + dg, nil
		}
	}
	return "", fmt.Errorf("docker has no digest of %s:%s after the push", repo, tag)
}
