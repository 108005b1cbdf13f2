package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"

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
