package verify

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// fetchProbeBranch is the branch the fetch probe makes in the agent's clone
// for as long as it takes to bundle it.
const fetchProbeBranch = "agentbox-verify-probe"

// fetchProbeScript runs as the agent in its clone: it commits, on a branch
// of its own and without touching the work tree, what an agent would plant
// for the host (a folder-open task in .vscode and a gitlink), writes a
// bundle of that one commit to stdout and removes the branch.
const fetchProbeScript = `set -eu
cd "$1"
b=refs/heads/` + fetchProbeBranch + `
blob=$(printf '{"version":"2.0.0","tasks":[{"label":"x","command":"true","runOptions":{"runOn":"folderOpen"}}]}\n' | git hash-object -w --stdin)
vscode=$(printf '100644 blob %s\ttasks.json\n' "$blob" | git mktree)
tree=$(printf '040000 tree %s\t.vscode\n160000 commit %s\tlib\n' "$vscode" 1111111111111111111111111111111111111111 | git mktree --missing)
commit=$(GIT_AUTHOR_NAME=verify GIT_AUTHOR_EMAIL=verify@agentbox.invalid GIT_COMMITTER_NAME=verify GIT_COMMITTER_EMAIL=verify@agentbox.invalid git commit-tree -m "agentbox verify: what fetch must refuse" "$tree")
git update-ref "$b" "$commit"
trap 'git update-ref -d "$b"' EXIT
git bundle create - "$b"
`

// FetchProbe checks, from the host, the gate that keeps the agent's writes
// off the host: a commit made in the sandbox that plants a .vscode task and
// a gitlink must be refused by agentbox fetch's rules, applied with this
// project's policy to a scratch repository (the project's own refs are not
// touched).
func FetchProbe(ctx context.Context, c sandbox.Compose, cfg *config.Config) Probe {
	const tried = "bring back a commit of .vscode/tasks.json and a gitlink made in the sandbox"
	p := Probe{Area: "files", Probe: "protected paths", Tried: tried}
	fail := func(format string, args ...any) Probe {
		p.Result, p.Happened = "FAIL", fmt.Sprintf(format, args...)
		return p
	}
	bundle, err := c.Output(ctx, "", "exec", "-T", "agent", "bash", "-c", fetchProbeScript, "probe", cfg.Workspace)
	if err != nil {
		return fail("could not make the commit in the sandbox: %v", err)
	}
	scratch, err := os.MkdirTemp("", "agentbox-verify-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(scratch)
	if out, err := exec.CommandContext(ctx, "git", "init", "-q", scratch).CombinedOutput(); err != nil {
		return fail("git init: %s", sandbox.FirstLine(out, err))
	}
	res, err := gitgate.Fetch(ctx, gitgate.FetchOptions{
		Dir:          scratch,
		BundleReader: bytes.NewReader(bundle),
		Policy:       gitgate.Policy{Writable: cfg.Writable, ReadOnly: cfg.ReadOnly},
	})
	if err != nil {
		return fail("fetch failed: %v", err)
	}
	var why []string
	for _, b := range res.Branches {
		if b.Name != fetchProbeBranch {
			continue
		}
		if b.Status != gitgate.StatusRefused {
			return fail("fetch accepted it (%s)", b.Status)
		}
		for _, r := range b.Reasons {
			why = append(why, r.Path)
		}
	}
	if len(why) == 0 {
		return fail("the bundle held no branch %s", fetchProbeBranch)
	}
	if refs, _ := filepath.Glob(filepath.Join(scratch, ".git", "refs", "heads", "agentbox", "*")); len(refs) > 0 {
		return fail("fetch wrote %d branches", len(refs))
	}
	p.Result, p.Happened = "PASS", "refused ("+strings.Join(why, ", ")+")"
	return p
}
