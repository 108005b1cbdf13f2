package task

// A task of agentbox run, prepared: checked against the sandbox and the
// repository, its directory made (the bare clone at --ref, the compose
// override, the record); nothing runs yet.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task/direct"
)

// Options are what agentbox run asks of a task, its flags checked.
type Options struct {
	Dir       string // the project directory
	Name      string
	Ref       string // the commit the branch starts from
	Argv      []string
	Profile   string
	Timeout   time.Duration
	Workspace string // WorkspaceClone or WorkspaceDirect
	// On is OnKubernetes for a task on a cluster, at Context ("":
	// kubectl's current one) and Namespace ("": kubernetes.namespace).
	On, Context, Namespace string
}

// Prepared is a task ready to start, or a recorded one reopened (Reopen).
type Prepared struct {
	Rec   *Record
	Cfg   *config.Config
	Files map[string][]byte // the generated files, as compiled (run only)
	Dir   string            // the task's directory
	// Docker runs a task on this machine; Main is docker compose on the
	// sandbox (run only), Compose on the task's project.
	Docker        sandbox.Docker
	Main, Compose []string
	Direct        *direct.Plan // run --workspace direct only
	Kubectl       string       // the kubectl of a task on a cluster
	// LoginFrom is the sandbox's state volume whose login the task's state
	// volume starts with (run.copy_login); LoginNote says why there is none.
	LoginFrom, LoginNote string
}

// Prepare checks the task against the sandbox c and the repository, and
// makes its directory: its clone and override, and its record. On error
// nothing is left behind.
func Prepare(ctx context.Context, c *generator.Compiled, o Options) (*Prepared, error) {
	p := &Prepared{Cfg: c.Config, Files: c.Files}
	var err error
	if p.Dir, err = Dir(p.Cfg.Name, o.Name); err != nil {
		return nil, err
	}
	if o.Workspace == WorkspaceDirect {
		if p.Direct, err = direct.NewPlan(p.Cfg, o.Dir, p.Dir); err != nil {
			return nil, err
		}
	}
	base, err := resolveCommit(ctx, o.Dir, o.Ref)
	if err != nil {
		return nil, err
	}
	if err := p.target(ctx, o); err != nil {
		return nil, err
	}
	branch, err := newBranch(ctx, p.Cfg, o)
	if err != nil {
		return nil, err
	}
	if err := p.record(o, base, branch); err != nil {
		return nil, err
	}
	p.LoginFrom, p.LoginNote = loginSource(ctx, p.Docker, p.Cfg, p.Rec)
	if err := p.makeDir(ctx); err != nil {
		os.RemoveAll(p.Dir)
		return nil, err
	}
	return p, nil
}

// Reopen is a recorded task of the sandbox cfg in the project directory
// dir as Prepare left it, for stop, logs and rm: docker (with dockerErr,
// the reason there is none) runs it on this machine.
func Reopen(cfg *config.Config, dir string, rec *Record, docker sandbox.Docker, dockerErr error) (*Prepared, error) {
	tdir, err := Dir(cfg.Name, rec.Name)
	if err != nil {
		return nil, err
	}
	p := &Prepared{Rec: rec, Cfg: cfg, Dir: tdir}
	if rec.On == OnKubernetes {
		p.Kubectl, err = FindKubectl()
		return p, err
	}
	if dockerErr != nil {
		return nil, dockerErr
	}
	p.Docker, p.Compose = docker, composeArgv(docker.Path, dir, cfg, rec, tdir)
	return p, nil
}

// FindKubectl finds kubectl.
func FindKubectl() (string, error) {
	k, err := exec.LookPath("kubectl")
	if err != nil {
		return "", errors.New("kubectl is not installed (or not on PATH): agentbox run --on kubernetes drives the cluster with it")
	}
	return k, nil
}

// composeArgv is docker compose on a task's project: its profile's
// generated file and the task's override.
func composeArgv(docker, dir string, cfg *config.Config, rec *Record, taskDir string) []string {
	profile := rec.Profile
	if profile == "" {
		profile = config.ProfileBalanced
	}
	return []string{docker, "compose", "-f", sandbox.ComposeFile(dir, cfg, profile),
		"-f", filepath.Join(taskDir, "compose.yml"), "-p", rec.Project}
}

// target finds what runs the task: kubectl on its cluster, or docker and
// compose on the sandbox's profile here.
func (p *Prepared) target(ctx context.Context, o Options) error {
	var err error
	if o.On == OnKubernetes {
		if p.Cfg.Kubernetes == nil {
			return errors.New("agentbox.yaml has no kubernetes section: --on kubernetes needs its namespace and registry")
		}
		p.Kubectl, err = FindKubectl()
		return err
	}
	if p.Docker, err = sandbox.Check(ctx); err != nil {
		return err
	}
	p.Main = sandbox.ProjectArgv(p.Docker.Path, o.Dir, p.Cfg, o.Profile)
	return nil
}

// newBranch is the task's branch ("" for a direct task), after checking
// that neither the task nor its branch exists, and that no other direct
// task works on the project.
func newBranch(ctx context.Context, cfg *config.Config, o Options) (string, error) {
	branch := "agentbox/" + o.Name
	if _, err := Read(cfg.Name, o.Name); err == nil {
		return "", fmt.Errorf("task %s exists; remove it first (agentbox rm %s) or choose another --name", o.Name, o.Name)
	}
	if o.Workspace == WorkspaceDirect {
		return "", noOtherDirectTask(cfg.Name)
	}
	if out, err := gitOut(ctx, o.Dir, "rev-parse", "-q", "--verify", "refs/heads/"+branch); err == nil && out != "" {
		return "", fmt.Errorf("branch %s exists in the repository; delete it or choose another --name", branch)
	}
	return branch, nil
}

// noOtherDirectTask refuses a second direct task on one project: two agents
// would write one work tree.
func noOtherDirectTask(project string) error {
	tasks, err := List(project)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.Workspace == WorkspaceDirect && t.State == StateRunning {
			return fmt.Errorf("task %s works on the project directory already (--workspace direct); stop it or wait for it first", t.Name)
		}
	}
	return nil
}

// record makes the task's record, and its compose command or Job name.
func (p *Prepared) record(o Options, base, branch string) error {
	now := time.Now()
	p.Rec = &Record{Name: o.Name, Project: generator.TaskProject(p.Cfg.Name, o.Name), Dir: o.Dir, Ref: o.Ref,
		Base: base, Branch: branch, Command: o.Argv, Started: now, State: StateRunning, Profile: o.Profile,
		// Whole seconds, as egress keeps it; rounded up, never earlier.
		Deadline: now.Add(o.Timeout + time.Second - 1).Truncate(time.Second)}
	if o.Workspace == WorkspaceDirect {
		p.Rec.Workspace = WorkspaceDirect
	}
	if o.On != OnKubernetes {
		p.Compose = composeArgv(p.Docker.Path, o.Dir, p.Cfg, p.Rec, p.Dir)
		return nil
	}
	ns := o.Namespace
	if ns == "" {
		ns = p.Cfg.Kubernetes.Namespace
	}
	p.Rec.On, p.Rec.KubeContext, p.Rec.KubeNamespace = OnKubernetes, o.Context, ns
	var err error
	p.Rec.Job, err = JobName(p.Cfg.Name, o.Name)
	return err
}

// JobName is the Job of a task: NAME-task-TASK, which must be a label
// value (its Pods carry it), at most 63 characters.
func JobName(project, task string) (string, error) {
	n := generator.TaskProject(project, task)
	if len(n) > 63 {
		return "", fmt.Errorf("the task's Job name %s is longer than 63 characters; choose a shorter --name", n)
	}
	return n, nil
}

// makeDir makes the task's directory: its bare clone of the repository,
// whose HEAD is the task's branch at the base commit (a direct task: the
// project's own git database), its compose override or bundle, and its
// record.
func (p *Prepared) makeDir(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(p.Dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(p.Dir, 0o700); err != nil {
		return fmt.Errorf("making the task's directory: %w", err)
	}
	origin, binds, err := p.makeOrigin(ctx)
	if err != nil {
		return err
	}
	if p.Rec.On == OnKubernetes {
		// The clone reaches the Pod as a bundle of its branch, HEAD on it.
		if _, err := gitOut(ctx, "", "--git-dir", origin, "bundle", "create", "--quiet", filepath.Join(p.Dir, "task.bundle"),
			"HEAD", "refs/heads/"+p.Rec.Branch); err != nil {
			return fmt.Errorf("making the task's bundle: %w", err)
		}
		return p.Rec.Write(p.Cfg.Name)
	}
	t := p.Task()
	t.Origin, t.Binds, t.LoginFrom = origin, binds, p.LoginFrom
	override, err := generator.TaskOverride(p.Cfg, t)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.Dir, "compose.yml"), override, 0o600); err != nil {
		return err
	}
	return p.Rec.Write(p.Cfg.Name)
}

// makeOrigin makes the git database the task's workspace starts from: a
// bare clone whose HEAD is the task's branch at the base commit, or for a
// direct task the project's own (read-only: the workspace's entrypoint
// checks that the work tree is this project's), with its binds.
func (p *Prepared) makeOrigin(ctx context.Context) (string, []generator.Bind, error) {
	if p.Rec.Workspace == WorkspaceDirect {
		if err := p.Direct.Write(p.Dir); err != nil {
			return "", nil, err
		}
		return filepath.Join(p.Direct.Binds[0].Source, ".git"), p.Direct.Binds, nil
	}
	origin := filepath.Join(p.Dir, "origin.git")
	for _, args := range [][]string{
		{"clone", "--bare", "--quiet", "--", p.Rec.Dir, origin},
		{"--git-dir", origin, "update-ref", "refs/heads/" + p.Rec.Branch, p.Rec.Base},
		{"--git-dir", origin, "symbolic-ref", "HEAD", "refs/heads/" + p.Rec.Branch},
	} {
		if _, err := gitOut(ctx, "", args...); err != nil {
			return "", nil, fmt.Errorf("making the task's clone: %w", err)
		}
	}
	return origin, nil, nil
}

// Task is the description of the task the generator makes its compose
// override and its Job of.
func (p *Prepared) Task() generator.Task {
	return generator.Task{Name: p.Rec.Name, Deadline: p.Rec.Deadline, Command: p.Rec.Command,
		Env: p.Cfg.TaskEnv(), Profile: p.Rec.Profile}
}

// loginSource is the sandbox's state volume of the task's profile, whose
// login (the agent's credentials files) run.copy_login copies into the
// task's fresh one; "" and a note when there is nothing to copy from.
func loginSource(ctx context.Context, docker sandbox.Docker, cfg *config.Config, rec *Record) (volume, note string) {
	prof, _ := cfg.Profile(rec.Profile)
	switch {
	case !cfg.CopyLogin:
		return "", ""
	case len(cfg.Agent.Credentials) == 0:
		return "", fmt.Sprintf("agent %s keeps no login in files; pass a key or token through secrets", cfg.Agent.Name)
	case rec.On == OnKubernetes:
		return "", "a task on a cluster starts without the sandbox's login; pass a key or token through secrets"
	case prof == nil || prof.Locked:
		return "", fmt.Sprintf("profile %s has no state volume; pass a key or token through secrets", rec.Profile)
	}
	volume = generator.Volume(cfg.Name, rec.Profile, generator.AgentStateVolume)
	if !docker.HasVolume(ctx, volume) {
		return "", fmt.Sprintf("the sandbox has no state volume %s yet (agentbox up --profile %s, then log in); the task starts without a login", volume, rec.Profile)
	}
	return volume, ""
}

// Remove removes what the task left on its backend b and its directory;
// its branch in the repository stays.
func Remove(ctx context.Context, b Backend, p *Prepared) error {
	if err := b.Remove(ctx); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Clean(p.Dir))
}

// resolveCommit returns the commit ref names in the repository at dir.
func resolveCommit(ctx context.Context, dir, ref string) (string, error) {
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
