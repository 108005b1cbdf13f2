package main

import (
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
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
	"github.com/agentbox-dev/agentbox/internal/iolimit"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/spf13/cobra"
)

// Limits of the bundle `agentbox fetch` accepts from the sandbox.
const (
	maxBundle     = 4 << 30 // bytes
	bundleTimeout = 15 * time.Minute
)

// bundleSource writes a git bundle of the agent's branches to w and returns
// the project's configuration. composeBundle is the real one (realDeps).
type bundleSource func(ctx context.Context, dir string, w io.Writer) (*config.Config, error)

// composeBundle runs `git bundle create - --branches` in the agent container.
func composeBundle(ctx context.Context, dir string, w io.Writer) (*config.Config, error) {
	o := &sandboxOptions{dir: dir, running: true}
	argv, cfg, err := o.compose(ctx, false)
	if err != nil {
		return nil, err
	}
	if prof, ok := cfg.Profile(o.profile); ok {
		c := *cfg // the running profile's workspace.readonly joins the top-level one
		c.ReadOnly = cfg.ReadOnlyPaths(prof)
		cfg = &c
	}
	ctx, cancel := context.WithTimeout(ctx, bundleTimeout)
	defer cancel()
	args := append(slices.Clone(argv[1:]), "exec", "-T", "agent", "git", "-C", cfg.Workspace, "bundle", "create", "-", "--branches")
	cmd := exec.CommandContext(ctx, argv[0], args...)
	lw := &iolimit.Writer{W: w, Left: maxBundle}
	var errb iolimit.Head
	cmd.Stdout, cmd.Stderr = lw, &errb
	err = cmd.Run()
	switch {
	case lw.Over:
		return nil, fmt.Errorf("the agent's bundle is larger than %d GiB; agentbox fetch refuses it", maxBundle>>30)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("making the agent's bundle took longer than %s", bundleTimeout)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("making the agent's bundle: interrupted (%v)", context.Cause(ctx))
	case err != nil:
		return nil, fmt.Errorf("making a bundle of the agent's branches (is the sandbox up? agentbox up): %s",
			sandbox.FirstLine(errb.Bytes(), err))
	}
	return cfg, nil
}

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
` + limitsText(gitgate.DefaultLimits) + `.
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
	prefix := o.prefix
	if !strings.HasPrefix(prefix, "refs/") {
		prefix = "refs/heads/" + prefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if err := o.checkTop(ctx); err != nil {
		return err
	}
	f, err := os.CreateTemp("", "agentbox-*.bundle")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cfg, err := o.bundle(ctx, o.dir, f)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	res, err := gitgate.Fetch(ctx, gitgate.FetchOptions{
		Dir:    o.dir,
		Bundle: f.Name(),
		Prefix: prefix,
		Policy: gitgate.Policy{Writable: cfg.Writable, ReadOnly: cfg.ReadOnly},
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

// checkTop refuses a project directory below the top of its repository:
// the paths of agentbox.yaml are relative to the project, the agent's clone
// and fetch's rules to the repository.
func (o *fetchOptions) checkTop(ctx context.Context) error {
	top, err := gitgate.TopLevel(ctx, o.dir)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(o.dir)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return err
	}
	if t, err := filepath.EvalSymlinks(top); err != nil || t != dir {
		return fmt.Errorf("agentbox fetch needs the project directory to be the top of its git repository (%s), not %s", top, dir)
	}
	return nil
}

func printFetchJSON(w io.Writer, res *gitgate.Result) error {
	branches := slices.Clone(res.Branches)
	for i := range branches {
		branches[i].Status = gitgate.Shown(branches[i])
	}
	return writeJSON(w, struct {
		Branches []gitgate.Branch `json:"branches"`
		Refused  int              `json:"refused"`
	}{branches, res.Refused()})
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

// limitsText says what a branch may bring, wrapped for --help.
func limitsText(l gitgate.Limits) string {
	size := func(n int64) string {
		if n >= 1<<30 && n%(1<<30) == 0 {
			return fmt.Sprintf("%d GiB", n>>30)
		}
		return fmt.Sprintf("%d MiB", n>>20)
	}
	text := fmt.Sprintf("%d new objects, %s for one object once inflated, %s for all of "+
		"them, a path of %d components or %d bytes, %d entries in a tree, a checkout of one of "+
		"its trees of %d files or %s", l.Objects, size(l.ObjectSize), size(l.TotalSize),
		l.Depth, l.PathBytes, l.TreeEntries, l.CheckoutFiles, size(l.CheckoutSize))
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > 72 {
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
// run's summary print it: [COMMIT ][PATH: ]WHY, escaped (the path is the
// agent's).
func reasonText(r gitgate.Reason) string {
	s := r.Why
	if r.Path != "" {
		s = r.Path + ": " + s
	}
	if r.Commit != "" {
		s = short(r.Commit) + " " + s
	}
	return esc(s)
}

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

func short(id string) string { return id[:min(12, len(id))] }
