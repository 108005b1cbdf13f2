package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// Compose is docker compose on one compose project: Argv is
// `docker compose -f FILE... -p NAME`, and Env gives the environment of a
// compose command (its first argument: up, build, ...).
type Compose struct {
	Docker
	Argv []string
	Env  func(command string) ([]string, error)
}

// ComposeArgv is docker compose on the compose files, as project.
func ComposeArgv(docker string, project string, files ...string) []string {
	argv := []string{docker, "compose"}
	for _, f := range files {
		argv = append(argv, "-f", f)
	}
	return append(argv, "-p", project)
}

// Grace is how long docker compose has to stop after an interrupt before
// it is killed.
const Grace = 10 * time.Second

// ExitError says that docker compose failed (its exit code) or was
// interrupted; the command's own exit code is agentbox's error.
type ExitError struct {
	Msg string
}

func (e *ExitError) Error() string { return e.Msg }

// Run runs docker compose with args, connected to the terminal's streams.
// When ctx is canceled (Ctrl-C, SIGTERM), compose gets an interrupt, as
// from the terminal, and Grace to stop cleanly.
func (c Compose) Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args ...string) error {
	env, err := c.Env(args[0])
	if err != nil {
		return err
	}
	err = c.runner().Run(ctx, Cmd{Args: append(append([]string{}, c.Argv...), args...), Env: env,
		Stdin: stdin, Stdout: stdout, Stderr: stderr, Grace: Grace})
	if err != nil {
		if ctx.Err() != nil {
			return &ExitError{fmt.Sprintf("agentbox: docker compose %s interrupted (%v)", args[0], context.Cause(ctx))}
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return &ExitError{fmt.Sprintf("docker compose %s failed (exit %d)", args[0], ee.ExitCode())}
		}
		return fmt.Errorf("running docker compose: %w", err)
	}
	return nil
}

// Output runs docker compose with args and stdin, and returns its stdout;
// an error carries the first line of its stderr.
func (c Compose) Output(ctx context.Context, stdin string, args ...string) ([]byte, error) {
	env, err := c.Env(args[0])
	if err != nil {
		return nil, err
	}
	var out, errb bytes.Buffer
	err = c.runner().Run(ctx, Cmd{Args: append(append([]string{}, c.Argv...), args...), Env: env,
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("docker compose %s: interrupted (%v)", args[0], context.Cause(ctx))
		}
		return nil, fmt.Errorf("docker compose %s: %s", args[0], FirstLine(errb.Bytes(), err))
	}
	return out.Bytes(), nil
}

// FollowEgress recreates the agent container when the egress container
// started after it. The agent joins egress's network namespace; when the
// engine restarts egress by itself (docker restart, a restart policy),
// compose does not see it and the agent keeps the old namespace, with
// loopback only (no network at all: fail closed) until it is recreated.
// compose's own restarts of egress take the agent along (depends_on
// restart: true).
func (c Compose) FollowEgress(ctx context.Context, stderr io.Writer) error {
	eg, err := c.StartedAt(ctx, "egress")
	if err != nil {
		return err
	}
	ag, err := c.StartedAt(ctx, "agent")
	if err != nil {
		return err
	}
	if !eg.After(ag) {
		return nil
	}
	fmt.Fprintln(stderr, "agentbox: the egress container restarted after the agent, whose network is gone; recreating the agent")
	if _, err := c.Output(ctx, "", "up", "-d", "--wait", "--force-recreate", "--no-deps", "agent"); err != nil {
		return fmt.Errorf("recreating the agent container: %w", err)
	}
	return nil
}

// StartedAt returns when the service's container last started.
func (c Compose) StartedAt(ctx context.Context, service string) (time.Time, error) {
	out, err := c.Output(ctx, "", "ps", "-q", service)
	if err != nil {
		return time.Time{}, err
	}
	id := strings.TrimSpace(string(out))
	if id == "" || strings.ContainsAny(id, " \n") {
		return time.Time{}, fmt.Errorf("docker compose ps: want one %s container, got %q", service, id)
	}
	b, err := c.output(ctx, "inspect", "--format", "{{.State.StartedAt}}", id)
	if err != nil {
		return time.Time{}, fmt.Errorf("docker inspect %s: %v", service, err)
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, fmt.Errorf("docker inspect %s: start time %q: %v", service, strings.TrimSpace(string(b)), err)
	}
	return t, nil
}
