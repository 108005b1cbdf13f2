package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/progress"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	exitDrift = 3
)

// exitErr carries an exit code out of a command. A nil err means the command
// already said everything it had to say.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func usageErrorf(format string, args ...any) error {
	return &exitErr{exitUsage, fmt.Errorf(format, args...)}
}

// run executes the command line with the collaborators d and returns the
// process exit code. Canceling ctx cancels the command.
func run(ctx context.Context, d deps, args []string, stdout, stderr io.Writer) int {
	ran := false
	root := newRootCmd(d, stdout, stderr, &ran)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitError
	var ee *exitErr
	switch {
	case errors.As(err, &ee):
		code, err = ee.code, ee.err
	case !ran:
		code = exitUsage // cobra rejected the command line before any command ran
	}
	var fe *flagError
	if errors.As(err, &fe) {
		if hint := dashDashHint(root, args); hint != "" {
			err = fmt.Errorf("%w\n%s", err, hint)
		}
	}
	if err != nil {
		// Errors may quote git or the agent: escaped, lines kept.
		fmt.Fprintln(stderr, termsafe.Message(strings.TrimRight(err.Error(), "\n")))
	}
	if code == exitUsage {
		fmt.Fprintln(stderr, "Run 'agentbox --help' for usage.")
	}
	return code
}

const rootLong = `agentbox runs AI coding agents in a locked-down local container sandbox.

You write one declarative file, agentbox.yaml; agentbox compiles it into files
you commit and review like code: Dockerfiles with digest-pinned bases, a
compose file, a Dev Container definition, and a firewall program (nftables and
a DNS filter) that allows only the egress the policy names.

Exit codes:
  0  success
  1  error: invalid configuration, missing lock entry, I/O
  2  usage: unknown command or flag, bad flag value
  3  generate --check found generated files out of date; diff --fail-on
     widen found a change that widens the sandbox; run's command exited 0
     but fetch's checks refused its branch (run exits with the command's
     code otherwise, 124 at its deadline, 130 when stopped)`

// newRootCmd returns the agentbox command: the root with its persistent
// flags, every command under it, each marking *ran when it runs, and
// cobra's completion.
func newRootCmd(d deps, stdout, stderr io.Writer, ran *bool) *cobra.Command {
	root := bareRoot(stdout, stderr)
	// -C is one flag of every command; each reads *dir when it runs.
	dir := root.PersistentFlags().StringP("dir", "C", ".", "the project directory (holding agentbox.yaml)")
	_ = root.MarkPersistentFlagDirname("dir") // completes directories only
	quiet := root.PersistentFlags().BoolP("quiet", "q", false, progress.FlagUsage)
	prog := progress.New(stderr, quiet)
	for _, c := range subcommands(dir, d, prog, stdout, stderr) {
		markRan(c, ran)
		root.AddCommand(c)
	}
	addCompletionCmd(root)
	return root
}

// bareRoot returns the root command alone: its help, version, outputs, and
// flag errors as usage errors.
func bareRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "agentbox",
		Short:         "Run AI coding agents in a locked-down container sandbox",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(), // --version, as `agentbox version`
	}
	root.SetVersionTemplate("agentbox {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitErr{exitUsage, &flagError{err}}
	})
	return root
}

// subcommands returns agentbox's commands; prog shows their progress.
func subcommands(dir *string, d deps, prog *progress.Progress, stdout, stderr io.Writer) []*cobra.Command {
	return append([]*cobra.Command{
		newInitCmd(dir, stdout, stderr),
		newGenerateCmd(dir, stdout, stderr),
		newValidateCmd(dir, stdout, stderr),
		newVersionCmd(stdout),
		newSchemaCmd(stdout),
		newBumpCmd(dir, d, prog, stdout, stderr),
		newUpCmd(dir, prog, stdout, stderr),
		newDownCmd(dir, stdout, stderr),
		newShellCmd(dir, stdout, stderr),
		newLogsCmd(dir, d, stdout, stderr),
		newVerifyCmd(dir, stdout, stderr),
		newFetchCmd(dir, d.bundle, stdout, stderr),
		newBlockedCmd(dir, d, stdout),
		newConnectionsCmd(dir, d, stdout),
		newAllowCmd(dir, d, stdout),
		newRevokeCmd(dir, d, stdout),
		newAuditCmd(dir, d, stdout),
		newPolicyCmd(dir, d, stdout, stderr),
		newRunCmd(dir, prog, stdout, stderr),
		newBuildCmd(dir, stdout, stderr),
		newStatusCmd(dir, d, stdout),
		newPsCmd(dir, stdout, stderr),
		newStopCmd(dir, stdout, stderr),
		newRmCmd(dir, stdout, stderr),
		newGcCmd(dir, stdout, stderr),
		newExplainCmd(dir, stdout),
		newDiffCmd(dir, stdout),
		newCICmd(dir, stdout, stderr),
	}, newRequestsCmds(dir, d, stdout, stderr)...)
}

// addCompletionCmd adds cobra's `completion bash|zsh|fish|powershell` (and
// the hidden __complete that its scripts call). Without a shell it would
// print its help and exit 0; it is a usage error like any other missing
// argument.
func addCompletionCmd(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	if comp, _, err := root.Find([]string{"completion"}); err == nil && comp != root {
		comp.Example = `  source <(agentbox completion bash)           # this shell; in ~/.bashrc for every one
  agentbox completion zsh > "${fpath[1]}/_agentbox"
  agentbox completion fish > ~/.config/fish/completions/agentbox.fish`
		comp.RunE = func(c *cobra.Command, args []string) error {
			return usageErrorf("name a shell: agentbox completion bash|zsh|fish|powershell")
		}
	}
}

// markRan makes c and its subcommands set *ran when they run.
func markRan(c *cobra.Command, ran *bool) {
	if body := c.RunE; body != nil {
		c.RunE = func(c *cobra.Command, args []string) error {
			*ran = true
			return body(c, args)
		}
	}
	for _, sub := range c.Commands() {
		markRan(sub, ran)
	}
}

// completeFrom completes a flag or an argument with values, and no files.
func completeFrom(values []string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
}
