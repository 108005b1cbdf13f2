package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/progress"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
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

// prepared is a task ready to start.
type prepared struct {
	rec     *task.Record
	cfg     *config.Config
	files   map[string][]byte // the generated files, as compiled
	docker  string
	main    []string // docker compose on the sandbox
	compose []string // docker compose on the task
	dir     string   // the task's directory
	direct  *directPlan
	kube    kubeTarget // a task on a cluster
	// loginFrom is the sandbox's state volume whose login the task's state
	// volume starts with (run.copy_login); loginNote says why there is none.
	loginFrom, loginNote string
}

func (o *runOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	p, err := o.prepare(ctx)
	if err != nil {
		return err
	}
	c := &task.Course{Sandbox: p.cfg.Name, Rec: p.rec, Backend: p.backend(o.prog, stderr),
		Times: task.Times{Prepared: time.Now()}}
	sandbox.WarnMissingSecrets(stderr, sandbox.Environ, p.cfg.TaskEnv())
	if p.loginNote != "" {
		fmt.Fprintf(stderr, "agentbox: run.copy_login: %s\n", p.loginNote)
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
			p.rec.Name, p.rec.Deadline.Format(time.RFC3339), p.rec.Name, p.rec.Name)
		return nil
	}
	return reportTask(sum, o.json, stdout, stderr)
}

// backend is the prepared task's backend: its Job on a cluster, or its
// compose project here (prog hears of an image build).
func (p *prepared) backend(prog *progress.Progress, stderr io.Writer) task.Backend {
	if p.rec.On == task.OnKubernetes {
		return &kubeBackend{p: p, stderr: stderr}
	}
	return &composeBackend{p: p, docker: sandbox.Docker{Path: p.docker}, prog: prog, stderr: stderr}
}

// prepare checks everything and makes the task's clone and override;
// nothing runs yet. On error nothing is left behind.
func (o *runOptions) prepare(ctx context.Context) (*prepared, error) {
	// Everything about the input first: a bad flag is reported before
	// Docker is asked anything.
	if err := o.checkFlags(); err != nil {
		return nil, err
	}
	c, timeout, profile, err := o.config()
	if err != nil {
		return nil, err
	}
	cfg := c.Config
	p := &prepared{cfg: cfg, files: c.Files}
	if p.dir, err = task.Dir(cfg.Name, o.name); err != nil {
		return nil, err
	}
	if o.workspace == task.WorkspaceDirect {
		if p.direct, err = planDirect(cfg, o.dir, p.dir); err != nil {
			return nil, err
		}
	}
	base, err := resolveCommit(ctx, o.dir, o.ref)
	if err != nil {
		return nil, err
	}
	if err := o.target(ctx, p, profile); err != nil {
		return nil, err
	}
	branch, err := o.branch(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := o.record(p, base, branch, profile, timeout); err != nil {
		return nil, err
	}
	p.loginFrom, p.loginNote = loginSource(ctx, p.docker, cfg, p.rec)
	if err := p.makeDir(ctx); err != nil {
		os.RemoveAll(p.dir)
		return nil, err
	}
	return p, nil
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
	return c, timeout, profile, nil
}

// target finds what runs the task: kubectl on its cluster, or docker and
// compose on the sandbox's profile here.
func (o *runOptions) target(ctx context.Context, p *prepared, profile string) error {
	var err error
	if o.on == task.OnKubernetes {
		p.kube, err = o.kubeTarget(p.cfg)
		return err
	}
	if p.docker, err = checkDocker(ctx); err != nil {
		return err
	}
	p.main = sandbox.ProjectArgv(p.docker, o.dir, p.cfg, profile)
	return nil
}

// branch is the task's branch ("" for a direct task), after checking that
// neither the task nor its branch exists, and that no other direct task
// works on the project.
func (o *runOptions) branch(ctx context.Context, cfg *config.Config) (string, error) {
	branch := "agentbox/" + o.name
	if _, err := task.Read(cfg.Name, o.name); err == nil {
		return "", fmt.Errorf("task %s exists; remove it first (agentbox rm %s) or choose another --name", o.name, o.name)
	}
	if o.workspace == task.WorkspaceDirect {
		return "", noOtherDirectTask(cfg.Name)
	}
	if out, err := gitOut(ctx, o.dir, "rev-parse", "-q", "--verify", "refs/heads/"+branch); err == nil && out != "" {
		return "", fmt.Errorf("branch %s exists in the repository; delete it or choose another --name", branch)
	}
	return branch, nil
}

// record makes the task's record, and its compose command or Job name.
func (o *runOptions) record(p *prepared, base, branch, profile string, timeout time.Duration) error {
	now := time.Now()
	p.rec = &task.Record{Name: o.name, Project: generator.TaskProject(p.cfg.Name, o.name), Dir: o.dir, Ref: o.ref,
		Base: base, Branch: branch, Command: o.argv, Started: now, State: task.StateRunning, Workspace: directOrEmpty(o.workspace), Profile: profile,
		// Whole seconds, as egress keeps it; rounded up, never earlier.
		Deadline: now.Add(timeout + time.Second - 1).Truncate(time.Second)}
	if o.on != task.OnKubernetes {
		p.compose = taskCompose(p.docker, o.dir, p.cfg, p.rec, p.dir)
		return nil
	}
	p.rec.On, p.rec.KubeContext, p.rec.KubeNamespace = task.OnKubernetes, p.kube.context, p.kube.namespace
	var err error
	p.rec.Job, err = kubeJobName(p.cfg.Name, o.name)
	return err
}

// makeDir makes the task's directory: its bare clone of the repository,
// whose HEAD is the task's branch at the base commit, its compose override
// and its record.
func (p *prepared) makeDir(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(p.dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(p.dir, 0o700); err != nil {
		return fmt.Errorf("making the task's directory: %w", err)
	}
	origin := filepath.Join(p.dir, "origin.git")
	var binds []generator.Bind
	if p.rec.Workspace == task.WorkspaceDirect {
		// The project's own git database, read-only: the workspace's
		// entrypoint checks that the work tree is this project's.
		origin, binds = filepath.Join(p.direct.binds[0].Source, ".git"), p.direct.binds
		if err := p.direct.write(p.dir); err != nil {
			return err
		}
	} else {
		for _, args := range [][]string{
			{"clone", "--bare", "--quiet", "--", p.rec.Dir, origin},
			{"--git-dir", origin, "update-ref", "refs/heads/" + p.rec.Branch, p.rec.Base},
			{"--git-dir", origin, "symbolic-ref", "HEAD", "refs/heads/" + p.rec.Branch},
		} {
			if _, err := gitOut(ctx, "", args...); err != nil {
				return fmt.Errorf("making the task's clone: %w", err)
			}
		}
	}
	if p.rec.On == task.OnKubernetes {
		// The clone reaches the Pod as a bundle of its branch, HEAD on it.
		if _, err := gitOut(ctx, "", "--git-dir", origin, "bundle", "create", "--quiet", filepath.Join(p.dir, "task.bundle"),
			"HEAD", "refs/heads/"+p.rec.Branch); err != nil {
			return fmt.Errorf("making the task's bundle: %w", err)
		}
		return p.rec.Write(p.cfg.Name)
	}
	t := p.task()
	t.Origin, t.Binds, t.LoginFrom = origin, binds, p.loginFrom
	override, err := generator.TaskOverride(p.cfg, t)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.dir, "compose.yml"), override, 0o600); err != nil {
		return err
	}
	return p.rec.Write(p.cfg.Name)
}

// task is the description of the task the generator makes its compose
// override and its Job of.
func (p *prepared) task() generator.Task {
	return generator.Task{Name: p.rec.Name, Deadline: p.rec.Deadline, Command: p.rec.Command,
		Env: p.cfg.TaskEnv(), Profile: p.rec.Profile}
}

// start builds the sandbox's images if they are missing or older than the
// generated files, and starts the task: egress healthy, then the agent.
func start(ctx context.Context, p *prepared, prog *progress.Progress, stderr io.Writer) error {
	if err := ensureImages(ctx, p, prog, stderr); err != nil {
		return p.fail(ctx, err)
	}
	var errb strings.Builder
	// Not --wait: a task may be over before compose would look. depends_on
	// (condition: service_healthy) starts the agent only once the firewall
	// is loaded and answering.
	if err := execCompose(ctx, p.compose, nil, io.Discard, &errb, "up", "--detach", "--no-build"); err != nil {
		return p.fail(ctx, fmt.Errorf("starting task %s: %v\n%s", p.rec.Name, err, strings.TrimSpace(errb.String())))
	}
	return nil
}

// fail removes what start made and records the task as failed.
func (p *prepared) fail(ctx context.Context, err error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_ = execCompose(ctx, p.compose, nil, io.Discard, io.Discard, "down", "--volumes", "--timeout", "1")
	os.RemoveAll(p.dir)
	return err
}

// ensureImages builds NAME-egress and NAME-agent when either is missing or
// older than a file in .agentbox/: a task reuses the images up builds.
// prog hears of the build.
func ensureImages(ctx context.Context, p *prepared, prog *progress.Progress, stderr io.Writer) error {
	// The settings' CA first: a changed one is a newer file below.
	us, err := settings.LoadUser(os.Getenv)
	if err != nil {
		return err
	}
	if err := sandbox.WriteLocalCA(p.rec.Dir, us); err != nil {
		return err
	}
	newest := time.Time{}
	_ = filepath.WalkDir(filepath.Join(p.rec.Dir, generator.OutDir), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil && fi.ModTime().After(newest) {
				newest = fi.ModTime()
			}
		}
		return nil
	})
	for _, img := range []string{p.cfg.Name + "-egress", p.cfg.Name + "-agent"} {
		out, err := exec.CommandContext(ctx, p.docker, "image", "inspect", "--format", "{{.Created}}", img).Output()
		created, perr := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(out)))
		if err != nil || perr != nil || created.Before(newest) {
			if err := sandbox.PullBases(ctx, p.docker, p.rec.Dir, stderr); err != nil {
				return err
			}
			done := prog.Step("building the sandbox's images (the first build takes minutes)")
			err := execComposeOf(ctx, sandbox.ComposeWith(p.main, us), nil, stderr, stderr, "build")
			done("the images are built", err)
			return err
		}
	}
	return nil
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

// resolveCommit returns the commit ref names in the repository at dir.
func resolveCommit(ctx context.Context, dir, ref string) (string, error) {
	if ref == "" || strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, "\x00\n") {
		return "", usageErrorf("invalid --ref %q", ref)
	}
	out, err := gitOut(ctx, dir, "rev-parse", "-q", "--verify", "--end-of-options", ref+"^{commit}")
	if err != nil || out == "" {
		return "", fmt.Errorf("--ref %q: no such commit in the repository", ref)
	}
	return out, nil
}

// gitOut runs git (in dir, unless it is "") and returns its trimmed stdout.
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func defaultTaskName() string {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return "t-" + time.Now().UTC().Format("0102-150405") + "-" + hex.EncodeToString(b)
}

// follow streams the agent's output until it exits; a canceled ctx
// (Ctrl-C) stops the task. It reports whether it was stopped.
func follow(ctx context.Context, p *prepared, id string, stdout, stderr io.Writer) bool {
	logs := exec.Command(p.docker, "logs", "--follow", id)
	logs.Stdout, logs.Stderr = stdout, stderr
	_ = logs.Start()
	wait := exec.Command(p.docker, "wait", id)
	done := make(chan error, 1)
	go func() { done <- wait.Run() }()
	stopped := false
	select {
	case <-done:
	case <-ctx.Done():
		stopped = true
		fmt.Fprintf(stderr, "agentbox: stopping task %s\n", p.rec.Name)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		_ = execCompose(sctx, p.compose, nil, io.Discard, io.Discard, "stop", "--timeout", "1")
		cancel()
		<-done
	}
	if logs.Process != nil {
		wd := time.AfterFunc(2*time.Second, func() { _ = logs.Process.Kill() })
		_ = logs.Wait()
		wd.Stop()
	}
	return stopped
}

// directOrEmpty is a task record's workspace: "direct", or empty for the
// clone.
func directOrEmpty(mode string) string {
	if mode == task.WorkspaceDirect {
		return task.WorkspaceDirect
	}
	return ""
}

// noOtherDirectTask refuses a second direct task on one project: two agents
// would write one work tree.
func noOtherDirectTask(project string) error {
	tasks, err := task.List(project)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.Workspace == task.WorkspaceDirect && t.State == task.StateRunning {
			return fmt.Errorf("task %s works on the project directory already (--workspace direct); stop it or wait for it first", t.Name)
		}
	}
	return nil
}

// kubeTarget is kubectl on the context and namespace of --context and
// --namespace, else kubectl's current context and kubernetes.namespace.
func (o *runOptions) kubeTarget(cfg *config.Config) (kubeTarget, error) {
	if cfg.Kubernetes == nil {
		return kubeTarget{}, errors.New("agentbox.yaml has no kubernetes section: --on kubernetes needs its namespace and registry")
	}
	k, err := checkKubectl()
	if err != nil {
		return kubeTarget{}, err
	}
	ns := o.namespace
	if ns == "" {
		ns = cfg.Kubernetes.Namespace
	}
	return kubeTarget{kubectl: k, context: o.context, namespace: ns}, nil
}

// loginSource is the sandbox's state volume of the task's profile, whose
// login (the agent's credentials files) run.copy_login copies into the
// task's fresh one; "" and a note when there is nothing to copy from.
func loginSource(ctx context.Context, docker string, cfg *config.Config, rec *task.Record) (volume, note string) {
	prof, _ := cfg.Profile(rec.Profile)
	switch {
	case !cfg.CopyLogin:
		return "", ""
	case len(cfg.Agent.Credentials) == 0:
		return "", fmt.Sprintf("agent %s keeps no login in files; pass a key or token through secrets", cfg.Agent.Name)
	case rec.On == task.OnKubernetes:
		return "", "a task on a cluster starts without the sandbox's login; pass a key or token through secrets"
	case prof == nil || prof.Locked:
		return "", fmt.Sprintf("profile %s has no state volume; pass a key or token through secrets", rec.Profile)
	}
	volume = generator.Volume(cfg.Name, rec.Profile, generator.AgentStateVolume)
	if err := exec.CommandContext(ctx, docker, "volume", "inspect", "--format", "{{.Name}}", volume).Run(); err != nil {
		return "", fmt.Sprintf("the sandbox has no state volume %s yet (agentbox up --profile %s, then log in); the task starts without a login", volume, rec.Profile)
	}
	return volume, ""
}
