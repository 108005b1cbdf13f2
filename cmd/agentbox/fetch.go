package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
	"github.com/spf13/cobra"
)

// bundleSource writes a git bundle of the agent's branches to w and returns
// the project's configuration; sandbox.BundleBranches is the real one
// (realDeps).
type bundleSource func(ctx context.Context, dir string, w io.Writer) (*config.Config, error)

type fetchOptions struct {
	dir    string
	bundle bundleSource
	json   bool
	prefix string
}

var fetchLong = `Bring the agent's commits back: make a git bundle of every branch of the
agent's clone (docker compose exec agent git bundle create), fetch it with
git's fsck on into a quarantine (an object directory of its own beside this
repository's), examine every new commit there, and write each accepted
branch to refs/heads/agentbox/<branch> (--prefix), forced: those refs belong
to the agent. Only the accepted branches' objects enter this repository.
Your own branches are never touched; merge or cherry-pick from
agentbox/<branch> as you would from a colleague's.

Nothing of the agent's repository runs: a bundle holds only objects and
branch names, not its config or hooks.

A branch is refused (and not written) when any of its new commits
  - changes a protected path (docs/workspace.md lists them: .vscode, .claude,
    .devcontainer, .agentbox, agentbox.yaml, .gitmodules, .envrc, ...) that
    workspace.writable does not name, or a workspace.readonly path, or the
    hooks directory your core.hooksPath names, or where your own symlinks
    lead one of those, or a file or link on the way there,
  - adds or changes a gitlink (a submodule),
  - adds a symlink that is absolute, climbs out of the repository or leads
    into such a path (also through other links),
  - has a path component .git,
  - has, anywhere in its tree (also assembled by a merge), a directory git
    would take for a repository that your trees do not have, or changes
    one you have other than in its objects and refs,
and when its destination is checked out in one of your work trees. Paths
match case-insensitively, as on macOS and Windows.

A branch is refused too when git's fsck refuses one of its objects, when
its name is longer than ` + strconv.Itoa(gitgate.DefaultLimits.NameBytes) + ` bytes, not printable or not a valid branch name
(the reason names it by its place in git for-each-ref refs/heads/ of the
agent's clone; its "ref" is empty), and when it is over a limit:
` + wrap(gitgate.DefaultLimits.String(), 72) + `.
The other branches are still written.

stdout: a table, one row per branch (and one per reason), or with --json:
  {"branches": [{"name": "feature/x",
                 "ref": "refs/heads/agentbox/feature/x",
                 "old": "<commit before, or empty>", "new": "<commit>",
                 "commits": 3,
                 "status": "new" | "updated" | "empty" | "unchanged" | "refused",
                 "reasons": [{"commit": "<id>", "path": ".vscode/tasks.json",
                              "why": "..."}]}],
   "refused": 1}

The project directory (-C) must be the top of its git repository.
A branch written with no commit of its own (its commit is one this
repository already has: nothing new arrived) shows as "empty", not "new"
or "updated".

Exit 0 when every branch was written or unchanged, 1 when any was refused
or on error.`

func newFetchCmd(dir *string, bundle bundleSource, stdout, stderr io.Writer) *cobra.Command {
	o := &fetchOptions{bundle: bundle}
	c := &cobra.Command{
		Use:   "fetch",
		Short: "Bring the agent's branches back into refs/heads/agentbox/, refusing changes to protected paths",
		Long:  fetchLong,
		Example: `  agentbox fetch
  git log -p main..agentbox/feature/x
  agentbox fetch --json | jq '.branches[] | select(.status == "refused")'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(c.Context(), stdout, stderr)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print the result as JSON")
	c.Flags().StringVar(&o.prefix, "prefix", "agentbox/", "where accepted branches go: below refs/heads/, or a full ref prefix refs/...")
	return c
}

func (o *fetchOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	prefix := gitgate.RefPrefix(o.prefix)
	res, err := gitgate.FetchProject(ctx, o.dir, prefix, func(ctx context.Context, w io.Writer) (gitgate.Policy, error) {
		cfg, err := o.bundle(ctx, o.dir, w)
		if err != nil {
			return gitgate.Policy{}, err
		}
		return gitgate.Policy{Writable: cfg.Writable, ReadOnly: cfg.ReadOnly}, nil
	})
	if err != nil {
		return err
	}
	if o.json {
		if err := printFetchJSON(stdout, res); err != nil {
			return err
		}
	} else {
		printFetchTable(stdout, res)
	}
	if n := res.Refused(); n > 0 {
		return &exitErr{exitError, fmt.Errorf("agentbox: %d of %d branches refused (reasons above); the others are in %s", n, len(res.Branches), prefix)}
	}
	fmt.Fprintf(stderr, "agentbox: %d branches in %s\n", len(res.Branches), prefix)
	return nil
}

func printFetchJSON(w io.Writer, res *gitgate.Result) error {
	return writeJSON(w, struct {
		Branches []gitgate.Branch `json:"branches"`
		Refused  int              `json:"refused"`
	}{res.ShownBranches(), res.Refused()})
}

// printFetchTable prints a row per branch and a row per reason below it.
// Branch names and paths are the agent's: every row is escaped (esc).
func printFetchTable(w io.Writer, res *gitgate.Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BRANCH\tSTATUS\tCOMMITS\tREASONS")
	for _, b := range res.Branches {
		reasons := make([]string, 0, len(b.Reasons))
		for _, r := range b.Reasons {
			reasons = append(reasons, reasonText(r))
		}
		first := "-"
		if len(reasons) > 0 {
			first = reasons[0]
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", shortName(esc(b.Name)), gitgate.Shown(b), b.Commits, first)
		for _, r := range reasons[min(1, len(reasons)):] {
			fmt.Fprintf(tw, "\t\t\t%s\n", r)
		}
	}
	tw.Flush()
}

// wrap breaks text into lines of at most width bytes, between words.
func wrap(text string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines, line = append(lines, line), ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}

// reasonText is why fetch's checks refused a branch, as fetch's table and
// run's summary print it (gitgate.Reason.String), escaped: the path is the
// agent's.
func reasonText(r gitgate.Reason) string { return esc(r.String()) }

// shortName cuts a branch name longer than 100 bytes (the gate refuses
// those over 250, and a reason says which branch it is).
func shortName(s string) string {
	if len(s) <= 100 {
		return s
	}
	cut := 100
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
