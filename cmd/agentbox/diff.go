package main

import (
	"io"

	"github.com/agentbox-dev/agentbox/review"
	"github.com/spf13/cobra"
)

func newDiffCmd(dir *string, stdout io.Writer) *cobra.Command {
	var format, failOn string
	c := &cobra.Command{
		Use:   "diff [BASE]",
		Short: "Show how the sandbox changed since a git revision",
		Long: `Compare the sandbox at git revision BASE (default: the merge base with the
upstream branch, or HEAD) with the working tree's agentbox.yaml and
agentbox.lock. Each change is one row: risk (the supply chain weakens: a
package new to the agent CLI's tree, moved in it, downgraded, or whose
tarball changed under its version; a Debian package or the agent CLI
downgraded, the Debian snapshot moved back, an image moved to another
repository), widens (the agent can do more), narrows, changes (neither) or
pin (a digest or version moved forward, its tag unchanged), classified by
what the agent gains (reach, time, resources, secrets, code that runs,
trust of the build's inputs), with the
agentbox.yaml key and line that caused it. BASE is read
from git's object database; nothing is checked out. A BASE without agentbox.yaml counts as
no sandbox: everything widens.

Exit codes: 0, 1 (error), 2 (usage), 3 (--fail-on widen and something widens
or is a risk).`,
		Example: `  agentbox diff
  agentbox diff origin/main --format markdown
  agentbox diff HEAD~1 --fail-on widen
  agentbox diff origin/main --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			format, err := outputFormat(c, format)
			if err != nil {
				return err
			}
			if failOn != "" && failOn != "widen" {
				return usageErrorf("invalid --fail-on %q: the only value is widen", failOn)
			}
			base := ""
			if len(args) == 1 {
				base = args[0]
			}
			r, err := review.DiffAt(c.Context(), *dir, base)
			if err != nil {
				return err
			}
			if err := reviewReport(stdout, format, r); err != nil {
				return err
			}
			if failOn != "" && r.Summary["widens"]+r.Summary["risks"] > 0 {
				return &exitErr{code: exitDrift}
			}
			return nil
		},
	}
	formatFlags(c, &format)
	c.Flags().StringVar(&failOn, "fail-on", "", `"widen": exit 3 when anything widens or is a risk`)
	_ = c.RegisterFlagCompletionFunc("fail-on", completeFrom([]string{"widen"}))
	return c
}
