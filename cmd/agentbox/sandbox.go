package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/spf13/cobra"
)

// sandboxOptions are shared by up, down, shell and logs: thin wrappers over
// `docker compose -f .agentbox/docker-compose.yml -p NAME`.
type sandboxOptions struct {
	dir string
	// choose says that the command chooses the profile (up): profile, or
	// the default when it is empty. Otherwise compose sets profile to the
	// one running.
	choose  bool
	profile string
	// stale says that the command says when the running sandbox predates
	// the generated files (shell).
	stale bool
	// running says that the command needs the sandbox running (shell,
	// verify, fetch, allow): without it, it says so and names agentbox up.
	running bool
}

// compose checks that the generated files are current and that Docker,
// compose v2 and the daemon are there, then returns the argv prefix of
// docker compose and the project's configuration. The project comes first,
// so that a mistake in agentbox.yaml is not hidden behind a missing daemon.
// When the command creates or starts containers (starts: up, verify, and
// any command added that runs one), it checks every mount source again
// (generator.CheckMounts): a link can have changed since generate. down,
// shell and logs pass false, so that the sandbox can always be stopped,
// whatever the agent did to the project.
func (o *sandboxOptions) compose(ctx context.Context, starts bool) ([]string, *config.Config, error) {
	cfg, err := o.current(starts)
	if err != nil {
		return nil, nil, err
	}
	if o.choose {
		if o.profile, err = checkProfile(cfg, o.profile); err != nil {
			return nil, nil, err
		}
	}
	docker, err := checkDocker(ctx)
	if err != nil {
		return nil, nil, err
	}
	if o.profile == "" {
		if o.profile, err = labelledProfile(ctx, docker, cfg.Name); err != nil {
			return nil, nil, err
		}
		switch {
		case o.profile == "" && o.running:
			return nil, nil, errNoSandbox(cfg.Name)
		case o.profile == "":
			o.profile = cfg.DefaultProfile
		}
	}
	return composeArgv(docker, o.dir, cfg, o.profile), cfg, nil
}

// current compiles the sandbox and checks that the generated files on disk
// are what it compiles to.
func (o *sandboxOptions) current(starts bool) (*config.Config, error) {
	c, err := generator.Compile(o.dir, generator.CompileOptions{CheckMounts: starts})
	if err != nil {
		return nil, err
	}
	if diff, err := generator.Diff(o.dir, c.Files); err != nil {
		return nil, err
	} else if diff != "" {
		return nil, errors.New("the generated files are out of date (agentbox generate --check fails); run \"agentbox generate\" and review the diff first")
	}
	return c.Config, nil
}

// composeArgv is docker compose on profile's generated file, as cfg's
// project.
func composeArgv(docker, dir string, cfg *config.Config, profile string) []string {
	return []string{docker, "compose", "-f", profileComposeFile(dir, cfg, profile), "-p", cfg.Name}
}

// checkDocker checks that the docker CLI, compose v2 and the daemon are
// there, and returns the path of docker.
func checkDocker(ctx context.Context) (string, error) {
	docker, err := exec.LookPath("docker")
	if err != nil {
		return "", errors.New("docker is not installed (or not on PATH): agentbox runs the sandbox with Docker Engine and compose v2")
	}
	if out, err := exec.CommandContext(ctx, docker, "compose", "version", "--short").CombinedOutput(); err != nil {
		if _, v1 := exec.LookPath("docker-compose"); v1 == nil {
			return "", errors.New("only compose v1 (docker-compose) is installed; agentbox needs compose v2, the `docker compose` plugin")
		}
		return "", fmt.Errorf("docker compose (v2) is not available: %s", firstLine(out, err))
	} else if v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v"); strings.HasPrefix(v, "1.") {
		return "", fmt.Errorf("docker compose %s is compose v1; agentbox needs compose v2", v)
	}
	// `docker version` reports the daemon's own error when there is no
	// daemon; `docker info --format` does not on Debian's 20.10 CLI, whose
	// template fails first on the missing server ("reflect: indirection
	// through nil pointer to embedded struct field Info").
	cmd := exec.CommandContext(ctx, docker, "version", "--format", "{{.Server.Version}}")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || strings.TrimSpace(stdout.String()) == "" {
		return "", fmt.Errorf("cannot reach the Docker daemon (is dockerd running?): %s", daemonError(stderr.Bytes(), stdout.Bytes(), err))
	}
	return docker, nil
}

// daemonError picks the line that says why the daemon cannot be reached
// from what a docker CLI printed: the first line of stderr, then of stdout,
// that is not a Go template's error ("ERROR: " taken off).
func daemonError(stderr, stdout []byte, err error) string {
	for _, out := range [][]byte{stderr, stdout} {
		for _, line := range strings.Split(string(out), "\n") {
			line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "ERROR:"))
			if line != "" && !strings.HasPrefix(line, "template:") {
				return line
			}
		}
	}
	if err != nil {
		return err.Error()
	}
	return "docker version reported no server"
}

// run runs docker compose with args, connected to the terminal; starts says
// whether that starts containers (compose).
func (o *sandboxOptions) run(ctx context.Context, starts bool, stdin io.Reader, stdout, stderr io.Writer, args ...string) error {
	argv, cfg, err := o.compose(ctx, starts)
	if err != nil {
		return err
	}
	if o.stale {
		warnStale(ctx, argv[0], o.dir, cfg.Name, stderr)
	}
	return execCompose(ctx, argv, stdin, stdout, stderr, args...)
}

// composeGrace is how long docker compose has to stop after an interrupt
// before it is killed.
const composeGrace = 10 * time.Second

// execCompose runs docker compose (argv) with args, connected to the
// terminal. When ctx is canceled (Ctrl-C, SIGTERM), compose gets an
// interrupt, as from the terminal, and time to stop cleanly.
func execCompose(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer, args ...string) error {
	env, err := composeEnviron(args[0])
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = composeGrace
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return &exitErr{exitError, fmt.Errorf("agentbox: docker compose %s interrupted (%v)", args[0], context.Cause(ctx))}
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return &exitErr{exitError, fmt.Errorf("docker compose %s failed (exit %d)", args[0], ee.ExitCode())}
		}
		return fmt.Errorf("running docker compose: %w", err)
	}
	return nil
}

func firstLine(out []byte, err error) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return err.Error()
	}
	return line
}

func newUpCmd(dir *string, prog *progress, stdout, stderr io.Writer) *cobra.Command {
	o := &sandboxOptions{}
	c := &cobra.Command{
		Use:   "up",
		Short: "Build and start the sandbox, and wait until it is healthy",
		Long: `Build the images and start the sandbox: docker compose up -d --build --wait
--remove-orphans, on the compose file of --profile (default: profile: in
agentbox.yaml, else balanced). The agent starts only once the egress (firewall)
container is healthy. On its first start it clones the project's git database
into its workspace volume; under a locked profile, workspace-init clones it
afresh at every start into a volume the agent sees read-only.
Refuses to start when the generated files are stale, when .git is not a
directory of the project's own, or when a path the sandbox mounts now goes
through a symbolic link (checked again here, as a link can change after
generate).`,
		Example: `  agentbox up
  agentbox up --profile locked
  agentbox up -C path/to/project`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return startSandbox(c.Context(), *dir, o.profile, prog, stdout, stderr)
		},
	}
	c.Flags().StringVar(&o.profile, "profile", "", profileFlagUsage)
	_ = c.RegisterFlagCompletionFunc("profile", completeProfiles(dir))
	return c
}

// upSandbox builds and starts the sandbox in dir under profile (the
// default when ""), with no progress lines: agentbox policy remove's
// restart, which says it restarts.
func upSandbox(ctx context.Context, dir, profile string, stdout, stderr io.Writer) error {
	return startSandbox(ctx, dir, profile, nil, stdout, stderr)
}

// startSandbox builds and starts the sandbox in dir under profile (the
// default when ""): agentbox up. prog hears of the build and the start.
func startSandbox(ctx context.Context, dir, profile string, prog *progress, stdout, stderr io.Writer) error {
	o := &sandboxOptions{dir: dir, choose: true, profile: profile}
	if err := generator.CheckGitDatabase(o.dir); err != nil {
		return err
	}
	argv, cfg, err := o.compose(ctx, true)
	if err != nil {
		return err
	}
	if err := checkOwner(ctx, argv[0], cfg.Name, o.dir); err != nil {
		return err
	}
	warnMissingSecrets(stderr, cfg.Secrets)
	if err := pullBases(ctx, argv[0], o.dir, stderr); err != nil {
		return err
	}
	done := prog.step("building the sandbox's images (the first build takes minutes)")
	err = execCompose(ctx, argv, os.Stdin, stdout, stderr, "build")
	if done("the images are built", err); err != nil {
		return err
	}
	done = prog.step("starting the sandbox (profile " + o.profile + "; the agent starts once the firewall is up)")
	err = execCompose(ctx, argv, os.Stdin, stdout, stderr, "up", "-d", "--wait", "--remove-orphans")
	if done("the sandbox is up (profile "+o.profile+")", err); err != nil {
		return err
	}
	if err := followEgress(ctx, argv, stderr); err != nil {
		return err
	}
	if err := recordUp(ctx, argv[0], o.dir, cfg.Name); err != nil {
		fmt.Fprintf(stderr, "agentbox: recording the files the sandbox started from (generate and shell will not say when it is older): %s\n", termsafe.Message(err.Error()))
	}
	return nil
}

func newShellCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	o := &sandboxOptions{}
	c := &cobra.Command{
		Use:   "shell [-- CMD [ARG...]]",
		Short: "Open a shell (or run a command) in the running agent container",
		Example: `  agentbox shell
  agentbox shell -- claude --version`,
		Annotations: map[string]string{takesCommand: "CMD"},
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			o.stale, o.running = true, true
			argv := []string{"exec"}
			if !isTerminal(os.Stdin) {
				argv = append(argv, "-T")
			}
			argv = append(argv, "agent")
			if len(args) == 0 {
				args = []string{"bash", "-l"}
			}
			return o.run(c.Context(), false, os.Stdin, stdout, stderr, append(argv, args...)...)
		},
	}
	return c
}

// services are the names `agentbox logs` accepts.
var services = []string{"agent", "egress"}

// logsOptions are what logs passes on to docker compose logs, docker logs
// or kubectl logs.
type logsOptions struct {
	follow bool
	tail   string // "": all; else a number of lines
	since  time.Time
}

// parseTail reads --tail: empty or "all" (every line), or a number of
// lines, 0 or more.
func parseTail(s string) (string, error) {
	if s == "" || s == "all" {
		return "", nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strings.HasPrefix(s, "+") {
		return "", usageErrorf("invalid --tail %q: a number of lines (0 or more), or all", s)
	}
	return strconv.Itoa(n), nil
}

// args are the flags of docker logs and docker compose logs.
func (l logsOptions) args() []string {
	var a []string
	if l.follow {
		a = append(a, "--follow")
	}
	if l.tail != "" {
		a = append(a, "--tail", l.tail)
	}
	if !l.since.IsZero() {
		a = append(a, "--since", l.since.UTC().Format(time.RFC3339Nano))
	}
	return a
}

// kubeArgs are the flags of kubectl logs.
func (l logsOptions) kubeArgs() []string {
	var a []string
	if l.follow {
		a = append(a, "--follow")
	}
	if l.tail != "" {
		a = append(a, "--tail="+l.tail)
	}
	if !l.since.IsZero() {
		a = append(a, "--since-time="+l.since.UTC().Format(time.RFC3339))
	}
	return a
}

func newLogsCmd(dir *string, d deps, stdout, stderr io.Writer) *cobra.Command {
	o := &sandboxOptions{}
	var follow, raw bool
	var tail, since string
	c := &cobra.Command{
		Use:   "logs [egress|agent|TASK]",
		Short: "Show the sandbox's logs (the egress log holds every DNS query and what the firewall rejected), or a task's output",
		Long: `Show the sandbox's logs (docker compose logs), or the output of a task of
agentbox run. What the agent wrote is escaped for the terminal: control
characters, escape sequences, C1 controls, bidirectional overrides and invalid
UTF-8 show as \x1b, \u{9b}, \u{202e} or \xNN (a backslash as \\); newlines
and tabs are kept. --raw passes the output through as it is: raw output may
contain escape sequences the agent wrote, which your terminal acts on.`,
		Example: `  agentbox logs egress
  agentbox logs -f
  agentbox logs egress --since 10m --tail 50
  agentbox logs fix-123   # the output of task fix-123 (agentbox run)
  agentbox logs --raw fix-123 | less -R`,
		Args: cobra.MaximumNArgs(1),
		ValidArgsFunction: func(c *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return withPrefix(append(slices.Clone(services), taskNames(*dir, false)...), prefix), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			l := logsOptions{follow: follow}
			var err error
			if l.tail, err = parseTail(tail); err != nil {
				return err
			}
			if l.since, err = parseSince(since, d.now()); err != nil {
				return err
			}
			stdout, stderr, flush := agentOutput(stdout, stderr, raw)
			defer flush()
			argv := append([]string{"logs"}, l.args()...)
			if len(args) == 1 {
				if !slices.Contains(services, args[0]) {
					if isTask(*dir, args[0]) {
						return taskLogs(c.Context(), *dir, args[0], l, stdout, stderr)
					}
					return usageErrorf("unknown service %q, and no task of that name; valid services are \"egress\" and \"agent\" (agentbox ps lists the tasks)", args[0])
				}
				argv = append(argv, args[0])
			}
			return o.run(c.Context(), false, os.Stdin, stdout, stderr, argv...)
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "follow the log")
	c.Flags().StringVar(&tail, "tail", "", "only the last N lines (of each container), or all")
	c.Flags().StringVar(&since, "since", "", "only the lines since: a duration (1h, 30m) or an RFC 3339 time")
	c.Flags().BoolVar(&raw, "raw", false, rawFlagUsage)
	return c
}

// followEgress recreates the agent container when the egress container
// started after it. The agent joins egress's network namespace; when the
// engine restarts egress by itself (docker restart, a restart policy),
// compose does not see it and the agent keeps the old namespace, with
// loopback only (no network at all: fail closed) until it is recreated.
// compose's own restarts of egress take the agent along (depends_on
// restart: true).
func followEgress(ctx context.Context, argv []string, stderr io.Writer) error {
	eg, err := startedAt(ctx, argv, "egress")
	if err != nil {
		return err
	}
	ag, err := startedAt(ctx, argv, "agent")
	if err != nil {
		return err
	}
	if !eg.After(ag) {
		return nil
	}
	fmt.Fprintln(stderr, "agentbox: the egress container restarted after the agent, whose network is gone; recreating the agent")
	if _, err := runCompose(ctx, argv, "", "up", "-d", "--wait", "--force-recreate", "--no-deps", "agent"); err != nil {
		return fmt.Errorf("recreating the agent container: %w", err)
	}
	return nil
}

// startedAt returns when the service's container last started.
func startedAt(ctx context.Context, argv []string, service string) (time.Time, error) {
	out, err := runCompose(ctx, argv, "", "ps", "-q", service)
	if err != nil {
		return time.Time{}, err
	}
	id := strings.TrimSpace(string(out))
	if id == "" || strings.ContainsAny(id, " \n") {
		return time.Time{}, fmt.Errorf("docker compose ps: want one %s container, got %q", service, id)
	}
	cmd := exec.CommandContext(ctx, argv[0], "inspect", "--format", "{{.State.StartedAt}}", id)
	b, err := cmd.Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("docker inspect %s: %v", service, err)
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, fmt.Errorf("docker inspect %s: start time %q: %v", service, strings.TrimSpace(string(b)), err)
	}
	return t, nil
}

// checkOwner refuses to start when containers of the compose project name
// belong to another project directory: two projects that share a name (for
// one, neither sets name:, and both get the default) would share their
// containers and volumes.
func checkOwner(ctx context.Context, docker, name, dir string) error {
	out, err := exec.CommandContext(ctx, docker, "ps", "-a", "--filter", "label=com.docker.compose.project="+name,
		"--format", `{{.Label "com.docker.compose.project.working_dir"}}`).Output()
	if err != nil {
		return fmt.Errorf("listing the containers of compose project %q: %v", name, err)
	}
	ours, err := filepath.Abs(filepath.Join(dir, generator.OutDir))
	if err != nil {
		return err
	}
	for _, wd := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if wd == "" || samePath(wd, ours) || samePath(wd, filepath.Join(ours, filepath.Base(generator.ProfilesDir))) {
			continue
		}
		return fmt.Errorf("the compose project %q belongs to another project (%s): give this one a name of its own in %s (name: ...)", name, filepath.Dir(wd), config.ConfigFile)
	}
	return nil
}

func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}
