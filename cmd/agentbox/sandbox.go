package main

// agentbox up, shell and logs: thin wrappers over `docker compose -f
// .agentbox/docker-compose.yml -p NAME` on the sandbox that a sandbox.Want
// names (sandbox.Open, sandbox.Up).

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/progress"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
	"github.com/spf13/cobra"
)

// openSandbox opens the sandbox that w names (sandbox.Open); its error
// carries its exit code (sandboxErr).
func openSandbox(ctx context.Context, w sandbox.Want) (*sandbox.Project, error) {
	p, err := sandbox.Open(ctx, w)
	return p, sandboxErr(err)
}

// sandboxErr is err with the exit code it carries: a profile that is not
// the project's is a usage error (--profile), and compose's failure is
// agentbox's error.
func sandboxErr(err error) error {
	if pe := (*sandbox.ProfileChoiceError)(nil); errors.As(err, &pe) {
		return usageErrorf("--profile: %v", pe.Err)
	}
	if ee := (*sandbox.ExitError)(nil); errors.As(err, &ee) {
		return &exitErr{exitError, err}
	}
	return err
}

// runCompose runs docker compose with args on the sandbox that w names,
// connected to the terminal; stale says first when the running sandbox
// predates the generated files (shell).
func runCompose(ctx context.Context, w sandbox.Want, stale bool, stdout, stderr io.Writer, args ...string) error {
	p, err := openSandbox(ctx, w)
	if err != nil {
		return err
	}
	if stale {
		sandbox.WarnStale(ctx, p.Compose.Path, w.Dir, p.Config.Name, stderr)
	}
	return sandboxErr(p.Compose.Run(ctx, os.Stdin, stdout, stderr, args...))
}

func newUpCmd(dir *string, prog *progress.Progress, stdout, stderr io.Writer) *cobra.Command {
	var profile string
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
			return sandboxErr(sandbox.Up(c.Context(), sandbox.Want{Dir: *dir, Profile: profile}, prog, os.Stdin, stdout, stderr))
		},
	}
	c.Flags().StringVar(&profile, "profile", "", profileFlagUsage)
	_ = c.RegisterFlagCompletionFunc("profile", completeProfiles(dir))
	return c
}

// upSandbox builds and starts the sandbox in dir under profile (the
// default when ""), with no progress lines: agentbox policy remove's
// restart, which says it restarts.
func upSandbox(ctx context.Context, dir, profile string, stdout, stderr io.Writer) error {
	return sandboxErr(sandbox.Up(ctx, sandbox.Want{Dir: dir, Profile: profile}, (*progress.Progress)(nil), os.Stdin, stdout, stderr))
}

func newShellCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "shell [-- CMD [ARG...]]",
		Short: "Open a shell (or run a command) in the running agent container",
		Example: `  agentbox shell
  agentbox shell -- claude --version`,
		Annotations: map[string]string{takesCommand: "CMD"},
		RunE: func(c *cobra.Command, args []string) error {
			argv := []string{"exec"}
			if !progress.IsTerminal(os.Stdin) {
				argv = append(argv, "-T")
			}
			argv = append(argv, "agent")
			if len(args) == 0 {
				args = []string{"bash", "-l"}
			}
			return runCompose(c.Context(), sandbox.Want{Dir: *dir, Running: true}, true, stdout, stderr, append(argv, args...)...)
		},
	}
	return c
}

// services are the names `agentbox logs` accepts.
var services = []string{"agent", "egress"}

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

func newLogsCmd(dir *string, d deps, stdout, stderr io.Writer) *cobra.Command {
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
			l := task.Logs{Follow: follow}
			var err error
			if l.Tail, err = parseTail(tail); err != nil {
				return err
			}
			if l.Since, err = parseSince(since, d.now()); err != nil {
				return err
			}
			stdout, stderr, flush := agentOutput(stdout, stderr, raw)
			defer flush()
			argv := append([]string{"logs"}, l.DockerArgs()...)
			if len(args) == 1 {
				if !slices.Contains(services, args[0]) {
					if task.IsTask(*dir, args[0]) {
						return taskLogs(c.Context(), *dir, args[0], l, stdout, stderr)
					}
					return usageErrorf("unknown service %q, and no task of that name; valid services are \"egress\" and \"agent\" (agentbox ps lists the tasks)", args[0])
				}
				argv = append(argv, args[0])
			}
			return runCompose(c.Context(), sandbox.Want{Dir: *dir}, false, stdout, stderr, argv...)
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "follow the log")
	c.Flags().StringVar(&tail, "tail", "", "only the last N lines (of each container), or all")
	c.Flags().StringVar(&since, "since", "", "only the lines since: a duration (1h, 30m) or an RFC 3339 time")
	c.Flags().BoolVar(&raw, "raw", false, rawFlagUsage)
	return c
}
