package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/progress"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
	"github.com/agentbox-dev/agentbox/task/kube"
	"github.com/spf13/cobra"
)

type runOptions struct {
	dir       string
	name      string
	timeout   string
	ref       string
	profile   string
	detach    bool
	json      bool
	raw       bool // the agent's output unescaped
	workspace string
	refSet    bool // --ref was given
	on        string
	context   string
	namespace string
	argv      []string
	prog      *progress.Progress
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
			o.dir, o.argv = *dir, args
			o.refSet = c.Flags().Changed("ref")
			return o.run(c.Context(), stdout, stderr)
		},
	}
	f := c.Flags()
	f.StringVar(&o.name, "name", "", "the task's name (lower-case letters, digits and -); default: t-<time>-<random>")
	f.StringVar(&o.timeout, "timeout", "", "the task's deadline from now, e.g. 30m or 1h30m (default: run.timeout; at most run.max_timeout)")
	f.StringVar(&o.ref, "ref", "HEAD", "the commit the task's branch starts from")
	f.StringVar(&o.profile, "profile", "", profileFlagUsage)
	_ = c.RegisterFlagCompletionFunc("profile", completeProfiles(dir))
	f.BoolVar(&o.detach, "detach", false, "start the task and return; agentbox ps, logs and stop follow it")
	f.BoolVar(&o.json, "json", false, "print the summary as JSON on stdout")
	f.BoolVar(&o.raw, "raw", false, rawFlagUsage)
	f.StringVar(&o.on, "on", "docker", "where the task runs: docker (this machine) or kubernetes (a Job on the cluster of agentbox.yaml's kubernetes section)")
	f.StringVar(&o.context, "context", "", "with --on kubernetes: the kubeconfig context (default: kubectl's current one)")
	f.StringVar(&o.namespace, "namespace", "", "with --on kubernetes: the namespace (default: kubernetes.namespace)")
	f.StringVar(&o.workspace, "workspace", task.WorkspaceClone, "clone: the task works in its own clone at --ref; direct: on the project directory itself, its .git and protected paths read-only")
	return c
}

func (o *runOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	p, err := o.prepare(ctx)
	if err != nil {
		return err
	}
	c := &task.Course{Sandbox: p.Cfg.Name, Rec: p.Rec, Backend: backend(p, o.prog, stderr),
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

// backend is a task's backend: its Job on a cluster, or its compose
// project here (prog hears of an image build).
func backend(p *task.Prepared, prog *progress.Progress, stderr io.Writer) task.Backend {
	if p.Rec.On == task.OnKubernetes {
		return kube.New(p, stderr)
	}
	return &task.Compose{P: p, Prog: prog, Stderr: stderr}
}

// prepare checks the flags and the sandbox, then has the task prepared
// (task.Prepare); nothing runs yet.
func (o *runOptions) prepare(ctx context.Context) (*task.Prepared, error) {
	// Everything about the input first: a bad flag is reported before
	// Docker is asked anything.
	if err := o.checkFlags(); err != nil {
		return nil, err
	}
	c, timeout, profile, err := o.config()
	if err != nil {
		return nil, err
	}
	return task.Prepare(ctx, c, task.Options{Dir: o.dir, Name: o.name, Ref: o.ref, Argv: o.argv, Profile: profile,
		Timeout: timeout, Workspace: o.workspace, On: o.on, Context: o.context, Namespace: o.namespace})
}

// checkFlags checks the task's name (choosing one when there is none)
// and the flags that go together.
func (o *runOptions) checkFlags() error {
	if o.name == "" {
		o.name = defaultTaskName()
	}
	if !generator.TaskName.MatchString(o.name) || slices.Contains(services, o.name) {
		return usageErrorf("invalid task name %q: want lower-case letters, digits and -, starting with a letter or digit, at most 40, and not egress or agent", o.name)
	}
	switch {
	case o.workspace != task.WorkspaceClone && o.workspace != task.WorkspaceDirect:
		return usageErrorf("invalid --workspace %q: want clone or direct", o.workspace)
	case o.workspace == task.WorkspaceDirect && o.refSet:
		return usageErrorf("--ref names the commit a task's clone starts from; --workspace direct works on the working tree as it is")
	case o.on != "docker" && o.on != task.OnKubernetes:
		return usageErrorf("invalid --on %q: want docker or kubernetes", o.on)
	case o.on != task.OnKubernetes && (o.context != "" || o.namespace != ""):
		return usageErrorf("--context and --namespace go with --on kubernetes")
	case o.on == task.OnKubernetes && o.workspace == task.WorkspaceDirect:
		return usageErrorf("--workspace direct runs on this machine's project directory, not on a cluster")
	case o.namespace != "" && !config.KubeNamespace.MatchString(o.namespace):
		return usageErrorf("invalid --namespace %q", o.namespace)
	case strings.HasPrefix(o.context, "-") || strings.ContainsAny(o.context, "\x00\n"):
		return usageErrorf("invalid --context %q", o.context)
	case o.ref == "" || strings.HasPrefix(o.ref, "-") || strings.ContainsAny(o.ref, "\x00\n"):
		return usageErrorf("invalid --ref %q", o.ref)
	}
	return nil
}

// config compiles the sandbox (its generated files current) and checks
// the flags against it: the task's timeout and profile.
func (o *runOptions) config() (*generator.Compiled, time.Duration, string, error) {
	c, err := sandbox.Compiled(o.dir, true)
	if err != nil {
		return nil, 0, "", err
	}
	cfg := c.Config
	timeout, err := taskTimeout(cfg, o.timeout)
	if err != nil {
		return nil, 0, "", err
	}
	if o.on == task.OnKubernetes && cfg.Kubernetes == nil {
		return nil, 0, "", errors.New("agentbox.yaml has no kubernetes section: --on kubernetes needs its namespace and registry")
	}
	profile, err := checkProfile(cfg, o.profile)
	if err != nil {
		return nil, 0, "", err
	}
	if prof, _ := cfg.Profile(profile); o.workspace == task.WorkspaceDirect && prof.Locked {
		return nil, 0, "", usageErrorf("--workspace direct writes the project directory; profile %s keeps it read-only", profile)
	}
	if o.on == task.OnKubernetes && profile != cfg.DefaultProfile {
		return nil, 0, "", usageErrorf("--on kubernetes runs the default profile (%s) only", cfg.DefaultProfile)
	}
	if _, err := task.JobName(cfg.Name, o.name); o.on == task.OnKubernetes && err != nil {
		return nil, 0, "", &exitErr{exitUsage, err}
	}
	return c, timeout, profile, nil
}

// taskTimeout is --timeout, or run.timeout, checked against run.max_timeout.
func taskTimeout(cfg *config.Config, flag string) (time.Duration, error) {
	if flag == "" {
		return cfg.RunTimeout, nil
	}
	d, err := config.ParseTaskDuration(flag)
	if err != nil {
		return 0, usageErrorf("--timeout %q: %v", flag, err)
	}
	if d > cfg.RunMaxTimeout {
		return 0, usageErrorf("--timeout %s is over run.max_timeout (%s in agentbox.yaml)", flag, cfg.RunMaxTimeout)
	}
	return d, nil
}

func defaultTaskName() string {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return "t-" + time.Now().UTC().Format("0102-150405") + "-" + hex.EncodeToString(b)
}
