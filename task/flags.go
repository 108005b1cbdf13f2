package task

// agentbox run's flags, checked on their own and then against the
// sandbox, before a task is prepared.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// Flags are agentbox run's flags as the command line gave them, with its
// command; Check and Options check them into Options.
type Flags struct {
	Dir       string // the project directory
	Name      string // "": DefaultName chooses one
	Timeout   string // as --timeout gives it; "": run.timeout
	Ref       string
	RefSet    bool   // --ref was given
	Profile   string // "": the sandbox's default profile
	Workspace string // WorkspaceClone or WorkspaceDirect
	// On is "docker" or OnKubernetes; Context and Namespace go with the
	// latter.
	On, Context, Namespace string
	Argv                   []string
}

// UsageError says that a flag or an argument is wrong: the command line's
// fault, which agentbox reports with its usage exit code.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// reservedNames are the sandbox's services: agentbox logs takes a task's
// name where it takes theirs, so no task is called so.
var reservedNames = []string{"agent", "egress"}

// Prepare checks the flags (Check), compiles the sandbox in f.Dir with its
// generated files current (sandbox.Compiled), checks the flags against it
// (Options) and prepares the task (Prepare); nothing runs yet. A bad flag
// is reported before Docker is asked anything.
func (f *Flags) Prepare(ctx context.Context) (*Prepared, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	c, err := sandbox.Compiled(f.Dir, true)
	if err != nil {
		return nil, err
	}
	o, err := f.Options(c.Config)
	if err != nil {
		return nil, err
	}
	return Prepare(ctx, c, o)
}

// Check checks the task's name (choosing one with DefaultName when there
// is none) and the flags that go together; it reads nothing.
func (f *Flags) Check() error {
	if f.Name == "" {
		f.Name = DefaultName(time.Now())
	}
	if !generator.TaskName.MatchString(f.Name) || slices.Contains(reservedNames, f.Name) {
		return usagef("invalid task name %q: want lower-case letters, digits and -, starting with a letter or digit, at most 40, and not egress or agent", f.Name)
	}
	switch {
	case f.Workspace != WorkspaceClone && f.Workspace != WorkspaceDirect:
		return usagef("invalid --workspace %q: want clone or direct", f.Workspace)
	case f.Workspace == WorkspaceDirect && f.RefSet:
		return usagef("--ref names the commit a task's clone starts from; --workspace direct works on the working tree as it is")
	case f.On != "docker" && f.On != OnKubernetes:
		return usagef("invalid --on %q: want docker or kubernetes", f.On)
	case f.On != OnKubernetes && (f.Context != "" || f.Namespace != ""):
		return usagef("--context and --namespace go with --on kubernetes")
	case f.On == OnKubernetes && f.Workspace == WorkspaceDirect:
		return usagef("--workspace direct runs on this machine's project directory, not on a cluster")
	case f.Namespace != "" && !config.KubeNamespace.MatchString(f.Namespace):
		return usagef("invalid --namespace %q", f.Namespace)
	case strings.HasPrefix(f.Context, "-") || strings.ContainsAny(f.Context, "\x00\n"):
		return usagef("invalid --context %q", f.Context)
	case f.Ref == "" || strings.HasPrefix(f.Ref, "-") || strings.ContainsAny(f.Ref, "\x00\n"):
		return usagef("invalid --ref %q", f.Ref)
	}
	return nil
}

// Options checks the flags, checked already (Check), against the sandbox
// cfg: the task's timeout and profile, and what a workspace or a cluster
// allows. It returns the task's Options.
func (f *Flags) Options(cfg *config.Config) (Options, error) {
	timeout, err := Timeout(cfg, f.Timeout)
	if err != nil {
		return Options{}, err
	}
	if f.On == OnKubernetes && cfg.Kubernetes == nil {
		return Options{}, errors.New("agentbox.yaml has no kubernetes section: --on kubernetes needs its namespace and registry")
	}
	profile, err := sandbox.CheckProfile(cfg, f.Profile)
	if err != nil {
		return Options{}, usagef("--profile: %v", err)
	}
	if prof, _ := cfg.Profile(profile); f.Workspace == WorkspaceDirect && prof.Locked {
		return Options{}, usagef("--workspace direct writes the project directory; profile %s keeps it read-only", profile)
	}
	if f.On == OnKubernetes && profile != cfg.DefaultProfile {
		return Options{}, usagef("--on kubernetes runs the default profile (%s) only", cfg.DefaultProfile)
	}
	if _, err := JobName(cfg.Name, f.Name); f.On == OnKubernetes && err != nil {
		return Options{}, &UsageError{err}
	}
	return Options{Dir: f.Dir, Name: f.Name, Ref: f.Ref, Argv: f.Argv, Profile: profile, Timeout: timeout,
		Workspace: f.Workspace, On: f.On, Context: f.Context, Namespace: f.Namespace}, nil
}

// Timeout is a task's timeout: flag (as --timeout gives it), or
// run.timeout when it is empty, checked against run.max_timeout.
func Timeout(cfg *config.Config, flag string) (time.Duration, error) {
	if flag == "" {
		return cfg.RunTimeout, nil
	}
	d, err := config.ParseTaskDuration(flag)
	if err != nil {
		return 0, usagef("--timeout %q: %v", flag, err)
	}
	if d > cfg.RunMaxTimeout {
		return 0, usagef("--timeout %s is over run.max_timeout (%s in agentbox.yaml)", flag, cfg.RunMaxTimeout)
	}
	return d, nil
}

// DefaultName is the name of a task started at now that run was given
// none: t-MMDD-HHMMSS-XXXX, the time in UTC and four random hex digits.
func DefaultName(now time.Time) string {
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return "t-" + now.UTC().Format("0102-150405") + "-" + hex.EncodeToString(b)
}
