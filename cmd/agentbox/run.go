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
	"github.com/spf13/cobra"
)

// Exit codes of agentbox run besides the command's own.
const (
	exitTimedOut = 124 // the deadline came, as timeout(1) says it
	exitStopped  = 130 // agentbox stop, or Ctrl-C
	// CMD exited 0, but fetch's checks refused the task's branch.
	exitBranchRefused = 3
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
	prog      *progress
}

func newRunCmd(dir *string, prog *progress, stdout, stderr io.Writer) *cobra.Command {
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
directories it made are disarmed when it ends. See the README for the risk
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
	f.StringVar(&o.workspace, "workspace", workspaceClone, "clone: the task works in its own clone at --ref; direct: on the project directory itself, its .git and protected paths read-only")
	return c
}

// prepared is a task ready to start.
type prepared struct {
	rec     *taskRecord
	cfg     *config.Config
	docker  string
	main    []string // docker compose on the sandbox
	compose []string // docker compose on the task
	dir     string   // the task's directory
	direct  *directPlan
	kube    kubeTarget // a task on a cluster
	times   struct{ prepared, started, commandEnded time.Time }
	// loginFrom is the sandbox's state volume whose login the task's state
	// volume starts with (run.copy_login); loginNote says why there is none.
	loginFrom, loginNote string
}

func (o *runOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	p, err := o.prepare(ctx)
	if err != nil {
		return err
	}
	p.times.prepared = time.Now()
	warnMissingSecrets(stderr, p.cfg.TaskEnv())
	if p.loginNote != "" {
		fmt.Fprintf(stderr, "agentbox: run.copy_login: %s\n", p.loginNote)
	}
	if p.rec.On == onKubernetes {
		return o.runKube(ctx, p, stdout, stderr)
	}
	if err := start(ctx, p, o.prog, stderr); err != nil {
		return err
	}
	p.times.started = time.Now()
	if o.detach {
		fmt.Fprintf(stderr, "agentbox: task %s started; deadline %s (agentbox ps, logs %s, stop %s)\n",
			p.rec.Name, p.rec.Deadline.Format(time.RFC3339), p.rec.Name, p.rec.Name)
		return nil
	}
	agent, err := serviceState(ctx, p.docker, p.rec.Project, "agent")
	if err != nil || agent == nil {
		return fmt.Errorf("task %s: its agent container is missing: %v", p.rec.Name, err)
	}
	out := stdout
	if o.json {
		out = stderr // stdout is the summary's
	}
	aout, aerr, flush := agentOutput(out, stderr, o.raw)
	stopped := follow(ctx, p, agent.ID, aout, aerr)
	flush()
	p.times.commandEnded = time.Now()
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	sum, err := finish(fctx, p, stopped)
	if err != nil {
		return err
	}
	return reportTask(sum, o.json, stdout, stderr)
}

// prepare checks everything and makes the task's clone and override;
// nothing runs yet. On error nothing is left behind.
func (o *runOptions) prepare(ctx context.Context) (*prepared, error) {
	if o.name == "" {
		o.name = defaultTaskName()
	}
	if !generator.TaskName.MatchString(o.name) || slices.Contains(services, o.name) {
		return nil, usageErrorf("invalid task name %q: want lower-case letters, digits and -, starting with a letter or digit, at most 40, and not egress or agent", o.name)
	}
	// Everything about the input first: a bad flag is reported before
	// Docker is asked anything.
	switch {
	case o.workspace != workspaceClone && o.workspace != workspaceDirect:
		return nil, usageErrorf("invalid --workspace %q: want clone or direct", o.workspace)
	case o.workspace == workspaceDirect && o.refSet:
		return nil, usageErrorf("--ref names the commit a task's clone starts from; --workspace direct works on the working tree as it is")
	case o.on != "docker" && o.on != onKubernetes:
		return nil, usageErrorf("invalid --on %q: want docker or kubernetes", o.on)
	case o.on != onKubernetes && (o.context != "" || o.namespace != ""):
		return nil, usageErrorf("--context and --namespace go with --on kubernetes")
	case o.on == onKubernetes && o.workspace == workspaceDirect:
		return nil, usageErrorf("--workspace direct runs on this machine's project directory, not on a cluster")
	case o.namespace != "" && !config.KubeNamespace.MatchString(o.namespace):
		return nil, usageErrorf("invalid --namespace %q", o.namespace)
	case strings.HasPrefix(o.context, "-") || strings.ContainsAny(o.context, "\x00\n"):
		return nil, usageErrorf("invalid --context %q", o.context)
	}
	cfg, err := (&sandboxOptions{dir: o.dir}).current(true)
	if err != nil {
		return nil, err
	}
	timeout, err := taskTimeout(cfg, o.timeout)
	if err != nil {
		return nil, err
	}
	if o.on == onKubernetes && cfg.Kubernetes == nil {
		return nil, errors.New("agentbox.yaml has no kubernetes section: --on kubernetes needs its namespace and registry")
	}
	profile, err := checkProfile(cfg, o.profile)
	if err != nil {
		return nil, err
	}
	if prof, _ := cfg.Profile(profile); o.workspace == workspaceDirect && prof.Locked {
		return nil, usageErrorf("--workspace direct writes the project directory; profile %s keeps it read-only", profile)
	}
	if o.on == onKubernetes && profile != cfg.DefaultProfile {
		return nil, usageErrorf("--on kubernetes runs the default profile (%s) only", cfg.DefaultProfile)
	}
	dir, err := taskDir(cfg.Name, o.name)
	if err != nil {
		return nil, err
	}
	var direct *directPlan
	if o.workspace == workspaceDirect {
		if direct, err = planDirect(cfg, o.dir, dir); err != nil {
			return nil, err
		}
	}
	base, err := resolveCommit(ctx, o.dir, o.ref)
	if err != nil {
		return nil, err
	}
	var kube kubeTarget
	var docker string
	var main []string
	if o.on == onKubernetes {
		if kube, err = o.kubeTarget(cfg); err != nil {
			return nil, err
		}
	} else {
		if docker, err = checkDocker(ctx); err != nil {
			return nil, err
		}
		main = composeArgv(docker, o.dir, cfg, profile)
	}
	branch := "agentbox/" + o.name
	if _, err := readTask(cfg.Name, o.name); err == nil {
		return nil, fmt.Errorf("task %s exists; remove it first (agentbox rm %s) or choose another --name", o.name, o.name)
	}
	if o.workspace == workspaceDirect {
		branch = ""
		if err := noOtherDirectTask(cfg.Name); err != nil {
			return nil, err
		}
	} else if out, err := gitOut(ctx, o.dir, "rev-parse", "-q", "--verify", "refs/heads/"+branch); err == nil && out != "" {
		return nil, fmt.Errorf("branch %s exists in the repository; delete it or choose another --name", branch)
	}
	p := &prepared{cfg: cfg, docker: docker, main: main, dir: dir, direct: direct, kube: kube}
	now := time.Now()
	p.rec = &taskRecord{Name: o.name, Project: generator.TaskProject(cfg.Name, o.name), Dir: o.dir, Ref: o.ref,
		Base: base, Branch: branch, Command: o.argv, Started: now, State: stateRunning, Workspace: directOrEmpty(o.workspace), Profile: profile,
		// Whole seconds, as egress keeps it; rounded up, never earlier.
		Deadline: now.Add(timeout + time.Second - 1).Truncate(time.Second)}
	if o.on == onKubernetes {
		p.rec.On, p.rec.KubeContext, p.rec.KubeNamespace = onKubernetes, kube.context, kube.namespace
		if p.rec.Job, err = kubeJobName(cfg.Name, o.name); err != nil {
			return nil, err
		}
	} else {
		p.compose = taskCompose(p.docker, o.dir, cfg, p.rec, dir)
	}
	p.loginFrom, p.loginNote = loginSource(ctx, p.docker, cfg, p.rec)
	if err := p.makeDir(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
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
	if p.rec.Workspace == workspaceDirect {
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
	if p.rec.On == onKubernetes {
		// The clone reaches the Pod as a bundle of its branch, HEAD on it.
		if _, err := gitOut(ctx, "", "--git-dir", origin, "bundle", "create", "--quiet", filepath.Join(p.dir, "task.bundle"),
			"HEAD", "refs/heads/"+p.rec.Branch); err != nil {
			return fmt.Errorf("making the task's bundle: %w", err)
		}
		return p.rec.write(p.cfg.Name)
	}
	override, err := generator.TaskOverride(p.cfg, generator.Task{Name: p.rec.Name, Deadline: p.rec.Deadline,
		Origin: origin, Command: p.rec.Command, Env: p.cfg.TaskEnv(), Binds: binds, Profile: p.rec.Profile,
		LoginFrom: p.loginFrom})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.dir, "compose.yml"), override, 0o600); err != nil {
		return err
	}
	return p.rec.write(p.cfg.Name)
}

// start builds the sandbox's images if they are missing or older than the
// generated files, and starts the task: egress healthy, then the agent.
func start(ctx context.Context, p *prepared, prog *progress, stderr io.Writer) error {
	if err := ensureImages(ctx, p, prog, stderr); err != nil {
		return p.fail(err)
	}
	var errb strings.Builder
	// Not --wait: a task may be over before compose would look. depends_on
	// (condition: service_healthy) starts the agent only once the firewall
	// is loaded and answering.
	if err := execCompose(ctx, p.compose, nil, io.Discard, &errb, "up", "--detach", "--no-build"); err != nil {
		return p.fail(fmt.Errorf("starting task %s: %v\n%s", p.rec.Name, err, strings.TrimSpace(errb.String())))
	}
	return nil
}

// fail removes what start made and records the task as failed.
func (p *prepared) fail(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = execCompose(ctx, p.compose, nil, io.Discard, io.Discard, "down", "--volumes", "--timeout", "1")
	os.RemoveAll(p.dir)
	return err
}

// ensureImages builds NAME-egress and NAME-agent when either is missing or
// older than a file in .agentbox/: a task reuses the images up builds.
// prog hears of the build.
func ensureImages(ctx context.Context, p *prepared, prog *progress, stderr io.Writer) error {
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
			if err := pullBases(ctx, p.docker, p.rec.Dir, stderr); err != nil {
				return err
			}
			done := prog.step("building the sandbox's images (the first build takes minutes)")
			err := execCompose(ctx, p.main, nil, stderr, stderr, "build")
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
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	if mode == workspaceDirect {
		return workspaceDirect
	}
	return ""
}

// noOtherDirectTask refuses a second direct task on one project: two agents
// would write one work tree.
func noOtherDirectTask(project string) error {
	tasks, err := listTasks(project)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.Workspace == workspaceDirect && t.State == stateRunning {
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

// runKube is run's course for a task on a cluster.
func (o *runOptions) runKube(ctx context.Context, p *prepared, stdout, stderr io.Writer) error {
	if err := startKube(ctx, p, stderr); err != nil {
		return err
	}
	p.times.started = time.Now()
	if o.detach {
		fmt.Fprintf(stderr, "agentbox: task %s started; deadline %s (agentbox ps, logs %s, stop %s)\n",
			p.rec.Name, p.rec.Deadline.Format(time.RFC3339), p.rec.Name, p.rec.Name)
		return nil
	}
	out := stdout
	if o.json {
		out = stderr
	}
	aout, aerr, flush := agentOutput(out, stderr, o.raw)
	stopped := followKube(ctx, p, aout, aerr)
	flush()
	p.times.commandEnded = time.Now()
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	sum, err := finishKube(fctx, p, stopped)
	if err != nil {
		return err
	}
	return reportTask(sum, o.json, stdout, stderr)
}

// loginSource is the sandbox's state volume of the task's profile, whose
// login (the agent's credentials files) run.copy_login copies into the
// task's fresh one; "" and a note when there is nothing to copy from.
func loginSource(ctx context.Context, docker string, cfg *config.Config, rec *taskRecord) (volume, note string) {
	prof, _ := cfg.Profile(rec.Profile)
	switch {
	case !cfg.CopyLogin:
		return "", ""
	case len(cfg.Agent.Credentials) == 0:
		return "", fmt.Sprintf("agent %s keeps no login in files; pass a key or token through secrets", cfg.Agent.Name)
	case rec.On == onKubernetes:
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
