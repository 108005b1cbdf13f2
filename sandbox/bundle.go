package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
	"github.com/agentbox-dev/agentbox/internal/iolimit"
)

// Bundle writes a git bundle of the branches of the agent's clone at
// workspace to w: `git bundle create - --branches` in the agent container.
// A bundle over gitgate.MaxBundle, or one that takes longer than
// gitgate.BundleTimeout, is refused.
func (c Compose) Bundle(ctx context.Context, workspace string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, gitgate.BundleTimeout)
	defer cancel()
	args := []string{"exec", "-T", "agent", "git", "-C", workspace, "bundle", "create", "-", "--branches"}
	env, err := c.Env(args[0])
	if err != nil {
		return err
	}
	lw := &iolimit.Writer{W: w, Left: gitgate.MaxBundle}
	var errb iolimit.Head
	err = c.runner().Run(ctx, Cmd{Args: append(append([]string{}, c.Argv...), args...), Env: env, Stdout: lw, Stderr: &errb})
	switch {
	case lw.Over:
		return fmt.Errorf("the agent's bundle is larger than %d GiB; agentbox fetch refuses it", gitgate.MaxBundle>>30)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("making the agent's bundle took longer than %s", gitgate.BundleTimeout)
	case ctx.Err() != nil:
		return fmt.Errorf("making the agent's bundle: interrupted (%v)", context.Cause(ctx))
	case err != nil:
		return fmt.Errorf("making a bundle of the agent's branches (is the sandbox up? agentbox up): %s",
			FirstLine(errb.Bytes(), err))
	}
	return nil
}

// BundleBranches writes a git bundle of the agent's branches in the running
// sandbox of the project in dir to w (Compose.Bundle), and returns the
// configuration fetch checks them against (FetchConfig).
func BundleBranches(ctx context.Context, dir string, w io.Writer) (*config.Config, error) {
	p, err := Open(ctx, Want{Dir: dir, Running: true})
	if err != nil {
		return nil, err
	}
	if err := p.Compose.Bundle(ctx, p.Config.Workspace, w); err != nil {
		return nil, err
	}
	return p.FetchConfig(), nil
}

// FetchConfig is the project's configuration as fetch applies it to the
// agent's branches: the running profile's workspace.readonly joins the
// top-level one.
func (p *Project) FetchConfig() *config.Config {
	prof, ok := p.Config.Profile(p.Profile)
	if !ok {
		return p.Config
	}
	c := *p.Config
	c.ReadOnly = p.Config.ReadOnlyPaths(prof)
	return &c
}
