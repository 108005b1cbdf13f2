package task

import (
	"testing"

	"github.com/agentbox-dev/agentbox/internal/gitgate"
)

// TestBranchStatusEmpty: a task branch with no commit beyond the task's
// base says so, rather than "new", which reads as work that arrived.
func TestBranchStatusEmpty(t *testing.T) {
	for _, tc := range []struct {
		b    gitgate.Branch
		want string
	}{
		{gitgate.Branch{Status: gitgate.StatusNew, Commits: 0}, "empty: no new commit"},
		{gitgate.Branch{Status: gitgate.StatusUpdated, Commits: 0}, "empty: no new commit"},
		{gitgate.Branch{Status: gitgate.StatusNew, Commits: 2}, "new"},
		{gitgate.Branch{Status: gitgate.StatusUnchanged, Commits: 0}, "unchanged"},
		{gitgate.Branch{Status: gitgate.StatusRefused, Commits: 1}, "refused"},
	} {
		if got := branchStatus(tc.b); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.b, got, tc.want)
		}
	}
}
