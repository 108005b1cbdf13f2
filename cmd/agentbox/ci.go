package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/spf13/cobra"
)

func newCICmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "ci",
		Short: "Write a CI workflow that checks, diffs and bumps the sandbox",
		Long: `Write a CI workflow for a hosting service: see its subcommands.
ci alone is a usage error.`,
		Example: `  agentbox ci github`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return usageErrorf("name a CI service: agentbox ci github")
		},
	}
	c.AddCommand(newCIGitHubCmd(dir, stdout, stderr))
	return c
}

type ciGitHubOptions struct {
	dir     string
	force   bool
	version string
	// failOn is "widen", "none", or "" to keep what the workflow records.
	failOn string
	// buildInfo says which agentbox this is; tests replace it.
	buildInfo func() (*debug.BuildInfo, bool)
}

func newCIGitHubCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	o := &ciGitHubOptions{buildInfo: debug.ReadBuildInfo}
	c := &cobra.Command{
		Use:   "github",
		Short: "Write .github/workflows/agentbox.yml and mark the generated files in .gitattributes",
		Long: `Write the GitHub Actions workflow .github/workflows/agentbox.yml, at the root
of the git repository that holds the project directory:

  on pull requests       agentbox generate --check, and agentbox diff in the
                         job summary and in one comment on the pull request,
                         updated in place
  weekly and on demand   agentbox bump, and one pull request with the new
                         lock and generated files, its body their agentbox diff

The check runs on pull_request_target: from the base branch's workflow,
which a pull request cannot change or remove. It installs agentbox before
checking the pull request out, into a directory of its own and without
credentials, and runs nothing of it: agentbox and git only read it. For the
gate to hold, make "generate --check and diff" a required status check of
the base branch and give the files agentbox reads code owners (README, "CI").

--fail-on widen makes the check fail when agentbox diff finds a widening,
so that merging one needs an override by someone allowed to give it. The
workflow records the option: a later run without --fail-on keeps it,
--fail-on none drops it.

Each job has the least permissions it needs; every action is pinned by
commit; agentbox is installed at this binary's version (--version names
another, and a build from source, which has none, needs it).

ci github also adds a block to .gitattributes marking the generated files
linguist-generated, so GitHub folds them in pull requests; the rest of
.gitattributes stays as it was. Both files are written all or nothing.
A workflow that agentbox did not write is not overwritten without --force.`,
		Example: `  agentbox ci github
  agentbox ci github -C path/to/project
  agentbox ci github --version v0.4.0   # from a build from source
  agentbox ci github --fail-on widen    # a widening fails the check`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(stdout, stderr)
		},
	}
	c.Flags().BoolVar(&o.force, "force", false, "overwrite a workflow that agentbox did not write")
	c.Flags().StringVar(&o.version, "version", "", "the version of agentbox the workflow installs (default: this binary's)")
	c.Flags().StringVar(&o.failOn, "fail-on", "", `"widen": the check fails when the sandbox widens; "none": it does not (default: as the workflow records, else none)`)
	_ = c.RegisterFlagCompletionFunc("fail-on", completeFrom([]string{generator.FailOnWiden, "none"}))
	return c
}

func (o *ciGitHubOptions) run(stdout, stderr io.Writer) error {
	if o.failOn != "" && o.failOn != generator.FailOnWiden && o.failOn != "none" {
		return usageErrorf("invalid --fail-on %q: valid values are %q and %q", o.failOn, generator.FailOnWiden, "none")
	}
	version, err := o.installVersion()
	if err != nil {
		return err
	}
	changes, err := generator.WriteGitHubCI(generator.GitHubCI{Dir: o.dir, Version: version, FailOn: o.failOn, Force: o.force})
	if err != nil {
		return err
	}
	for _, ch := range changes {
		fmt.Fprintf(stdout, "%-6s %s\n", ch.Kind, esc(ch.Path))
	}
	if len(changes) == 0 {
		fmt.Fprintln(stderr, "agentbox: the workflow and .gitattributes are up to date")
	}
	return nil
}

// installVersion is the version of agentbox the workflow installs: --version,
// else the module version this binary was built as (what go install
// recorded). A build without one, or with uncommitted changes ("+dirty"),
// cannot be installed by version: it needs --version.
func (o *ciGitHubOptions) installVersion() (string, error) {
	if o.version != "" {
		if err := generator.ValidateVersion(o.version); err != nil {
			return "", usageErrorf("invalid --version: %v", err)
		}
		return o.version, nil
	}
	var v string
	if bi, ok := o.buildInfo(); ok && bi != nil {
		v = bi.Main.Version
	}
	if generator.ValidateVersion(v) != nil {
		return "", fmt.Errorf("this agentbox has no version that go install can fetch (agentbox version: %s); name the version the workflow installs with --version, such as --version v1.2.3", buildVersion())
	}
	return v, nil
}
