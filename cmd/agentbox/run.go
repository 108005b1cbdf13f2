package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentbox-dev/agentbox/internal/progress"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
	"github.com/agentbox-dev/agentbox/task/kube"
	"github.com/spf13/cobra"
)

// runOptions are run's flags: the task's (task.Flags) and how run shows it.
type runOptions struct {
	task.Flags
	detach bool
	json   bool
	raw    bool // the agent's output unescaped
	prog   *progress.Progress
}

func newRunCmd(dir *string, prog *progress.Progress, stdout, stderr io.Writer) *cobra.Command {
	o := &runOptions{prog: prog}
	c := &cobra.Command{
		Use:   "run [--name TASK] [--profile P] [--timeout DURATION] [--ref REF] [--detach] [--json] -- CMD [ARG...]",
		Short: "Run one task in a fresh sandbox of its own, with a deadline it cannot move",
		Long: `Run CMD as one task: in a fresh copy of the sandbox (its own compose project,
so its own network namespace, firewall, workspace and agent state), working in
its own clone of the repository at --ref (default HEAD) on a new branch
agentbox/TASK, until CMD exits or the deadline comes (--timeout, default and
maximum from run: in agentbox.yaml), under --profile (default: profile: in
agentbox.yaml, else balanced; under a locked profile the clone is read-only and
only /tmp and /output are writable).

The deadline lives with the sandbox: the egress container keeps it, and the
agent shares its pid namespace. At the deadline egress is closed and every
process of the agent ends (SIGTERM, 1 s of grace, SIGKILL), even if agentbox
itself was killed. When the task ends, its branch comes back to the host
repository as refs/heads/agentbox/TASK, through the same checks as agentbox
fetch, and a summary follows on stderr (--json: on stdout, and CMD's own
output goes to stderr). CMD's output is escaped for the terminal as agentbox
logs escapes it, unless --raw.

--workspace direct runs the task on the project directory itself, uncommitted
changes included, with .git and the protected paths read-only and the hidden
ones masked; its changes stay in your working tree (no branch), and the git
directories it made are disarmed when it ends. See docs/tasks.md for the risk
this keeps.

Exit codes: CMD's own; 124 when the deadline came; 130 when it was stopped
(Ctrl-C or agentbox stop); 3 when CMD exited 0 but fetch's checks refused its
branch (the summary says why); 1 when agentbox could not run it; 2 for usage.`,
		Example: `  agentbox run -- claude -p "fix issue 123"
  agentbox run --name tests --timeout 45m -- codex exec "write tests for pkg/x"
  agentbox run --detach --name nightly -- ./scripts/agent-task.sh
  agentbox run --profile locked --name pr-tests -- make test`,
		Args:        cobra.MinimumNArgs(1),
		Annotations: map[string]string{takesCommand: "CMD"},
		RunE: func(c *cobra.Command, args []string) error {
			o.Dir, o.Argv = *dir, args
			o.RefSet = c.Flags().Changed("ref")
			return o.run(c.Context(), stdout, stderr)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Name, "name", "", "the task's name (lower-case letters, digits and -); default: t-<time>-<random>")
	f.StringVar(&o.Timeout, "timeout", "", "the task's deadline from now, e.g. 30m or 1h30m (default: run.timeout; at most run.max_timeout)")
	f.StringVar(&o.Ref, "ref", "HEAD", "the commit the task's branch starts from")
	f.StringVar(&o.Profile, "profile", "", profileFlagUsage)
	_ = c.RegisterFlagCompletionFunc("profile", completeProfiles(dir))
	f.BoolVar(&o.detach, "detach", false, "start the task and return; agentbox ps, logs and stop follow it")
	f.BoolVar(&o.json, "json", false, "print the summary as JSON on stdout")
	f.BoolVar(&o.raw, "raw", false, rawFlagUsage)
	f.StringVar(&o.On, "on", "docker", "where the task runs: docker (this machine) or kubernetes (a Job on the cluster of agentbox.yaml's kubernetes section)")
	f.StringVar(&o.Context, "context", "", "with --on kubernetes: the kubeconfig context (default: kubectl's current one)")
	f.StringVar(&o.Namespace, "namespace", "", "with --on kubernetes: the namespace (default: kubernetes.namespace)")
	f.StringVar(&o.Workspace, "workspace", task.WorkspaceClone, "clone: the task works in its own clone at --ref; direct: on the project directory itself, its .git and protected paths read-only")
	return c
}

func (o *runOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	p, err := o.Prepare(ctx)
	if err != nil {
		return taskErr(err)
	}
	c := &task.Course{Sandbox: p.Cfg.Name, Rec: p.Rec, Backend: task.BackendOf(p, kubeBackend, o.prog, stderr),
		Times: task.Times{Prepared: time.Now()}}
	sandbox.WarnMissingSecrets(stderr, sandbox.Environ, p.Cfg.TaskEnv())
	if p.LoginNote != "" {
		fmt.Fprintf(stderr, "agentbox: run.copy_login: %s\n", p.LoginNote)
	}
	out := stdout
	if o.json {
		out = stderr // stdout is the summary's
	}
	aout, aerr, flush := agentOutput(out, stderr, o.raw)
	sum, err := c.Run(ctx, o.detach, aout, aerr)
	flush()
	switch {
	case err != nil:
		return err
	case sum == nil:
		fmt.Fprintf(stderr, "agentbox: task %s started; deadline %s (agentbox ps, logs %s, stop %s)\n",
			p.Rec.Name, p.Rec.Deadline.Format(time.RFC3339), p.Rec.Name, p.Rec.Name)
		return nil
	}
	return reportTask(sum, o.json, stdout, stderr)
}

// kubeBackend is the Kubernetes backend of a task (task/kube), as task
// makes it.
func kubeBackend(p *task.Prepared, stderr io.Writer) task.Backend { return kube.New(p, stderr) }

// taskErr gives a task.UsageError, a wrong flag or argument, the usage
// exit code.
func taskErr(err error) error {
	if ue := (*task.UsageError)(nil); errors.As(err, &ue) {
		return &exitErr{exitUsage, err}
	}
	return err
}
