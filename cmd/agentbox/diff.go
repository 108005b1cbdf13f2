package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
	"github.com/agentbox-dev/agentbox/lockfile"
	"github.com/agentbox-dev/agentbox/review"
	"github.com/spf13/cobra"
)

// diffReport is the output of agentbox diff (its JSON form as documented in
// docs/review.md).
type diffReport struct {
	Base    string           `json:"base"`
	Summary map[string]int   `json:"summary"` // risks, widens, narrows, changes, pins
	Rows    []review.DiffRow `json:"rows"`
}

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
			r, err := sandboxDiff(c, *dir, base)
			if err != nil {
				return err
			}
			if err := report(stdout, "diff", format, r); err != nil {
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

// sandboxDiff compiles the sandbox at base and in the working tree and
// compares them.
func sandboxDiff(c *cobra.Command, dir, base string) (*diffReport, error) {
	head, err := explain(dir, nil)
	if err != nil {
		return nil, err
	}
	files := make([][]byte, 2)
	if base == "" {
		base = gitgate.DefaultBase(c.Context(), dir)
	}
	if base == "" {
		base = "(no commit yet)" // a base without a sandbox: everything is added
	} else if files, err = gitgate.ReadAt(c.Context(), dir, base, config.ConfigFile, lockfile.File); err != nil {
		return nil, err
	}
	var old *review.Sandbox
	if files[0] != nil {
		name := fmt.Sprintf("%s:%s", base, filepath.ToSlash(filepath.Join(dir, config.ConfigFile)))
		if old, err = explain(".", &generator.Source{File: name, Config: files[0], Lock: files[1]}); err != nil {
			return nil, fmt.Errorf("agentbox.yaml at %s does not load: %s", base, firstErrorLine(err))
		}
	}
	rows := review.DiffSandboxes(old, head)
	r := &diffReport{Base: base, Rows: rows, Summary: map[string]int{"risks": 0, "widens": 0, "narrows": 0, "changes": 0, "pins": 0}}
	for _, row := range rows {
		key := row.Kind
		switch key {
		case review.Pinned:
			key = "pins"
		case review.Risk:
			key = "risks"
		}
		r.Summary[key]++
	}
	if rows == nil {
		r.Rows = []review.DiffRow{}
	}
	return r, nil
}

func firstErrorLine(err error) string {
	line, rest, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
	if rest != "" {
		return line + fmt.Sprintf(" (and %d more)", strings.Count(rest, "\n")+1)
	}
	return line
}

// summary is "widens 2, narrows 1, pins 3".
func summary(r *diffReport) string {
	if len(r.Rows) == 0 {
		return "no change to the sandbox"
	}
	var parts []string
	for _, k := range []string{"risks", "widens", "narrows", "changes", "pins"} {
		if n := r.Summary[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	return strings.Join(parts, ", ")
}
