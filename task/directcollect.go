package task

// The collect of a direct task (run --workspace direct): the project
// directory itself, disarmed (package direct) before any git looks at it.

import (
	"context"
	"strings"

	"github.com/agentbox-dev/agentbox/task/direct"
)

// failDirect records that a direct task's work tree is not known to be
// disarmed: the task fails.
func failDirect(sum *Summary, err error) {
	sum.Branch = ""
	sum.BranchStatus = "not disarmed: " + err.Error() + "; do not run git or your tools in the project before you checked it"
	if sum.ExitCode == 0 {
		sum.ExitCode = ExitError
	}
}

// collectDirect ends a direct task's hold on the project: it disarms what
// the agent made (direct.Disarm), removes the placeholders that are still
// empty, and lists the work tree's changes. When disarming fails, no git
// runs and the task fails (failDirect). The task's containers have stopped.
func collectDirect(ctx context.Context, p *Prepared, sum *Summary) {
	st, err := direct.ReadState(p.Dir)
	if err != nil {
		failDirect(sum, err)
		return
	}
	top, err := direct.RealDir(p.Rec.Dir)
	if err != nil {
		failDirect(sum, err)
		return
	}
	sum.Branch = ""
	d, err := direct.Disarm(top, st)
	sum.Quarantined = append(sum.Quarantined, d.GitDirs...)
	sum.RemovedLinks = append(sum.RemovedLinks, d.Links...)
	if err != nil {
		failDirect(sum, err)
		return
	}
	st.RemovePlaceholders(top)
	sum.BranchStatus = WorkspaceDirect
	status, err := gitOut(ctx, top, "--no-optional-locks", "status", "--porcelain=v1", "--untracked-files=all")
	if err != nil {
		sum.BranchStatus = "not collected: " + err.Error()
		return
	}
	for _, l := range strings.Split(status, "\n") {
		if l != "" && len(sum.Uncommitted) < 200 {
			sum.Uncommitted = append(sum.Uncommitted, l)
		}
	}
	sum.Diffstat, _ = gitOut(ctx, top, "diff", "--no-ext-diff", "--no-textconv", "--stat=100", "HEAD", "--")
}
