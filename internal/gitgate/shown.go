package gitgate

import "fmt"

// StatusEmpty is what fetch's table and JSON say of a branch it wrote that
// brings no commit: its commit is one the host already had (from its own
// refs or the destination's old value). "new" would read as "work arrived".
const StatusEmpty Status = "empty"

// Shown is a branch's status as fetch and run print it: the gate's,
// or StatusEmpty for a branch written with no new commit.
func Shown(b Branch) Status {
	if b.Commits == 0 && (b.Status == StatusNew || b.Status == StatusUpdated) {
		return StatusEmpty
	}
	return b.Status
}

// ShownBranches is a copy of the result's branches, each with its status
// as Shown says it (fetch --json).
func (r *Result) ShownBranches() []Branch {
	branches := make([]Branch, len(r.Branches))
	for i, b := range r.Branches {
		b.Status = Shown(b)
		branches[i] = b
	}
	return branches
}

// String is the reason as fetch's table and run's summary print it:
// [COMMIT ][PATH: ]WHY, the commit cut to 12 characters. The path is the
// agent's: a terminal must see it escaped.
func (r Reason) String() string {
	s := r.Why
	if r.Path != "" {
		s = r.Path + ": " + s
	}
	if r.Commit != "" {
		s = r.Commit[:min(12, len(r.Commit))] + " " + s
	}
	return s
}

// String says what a branch may bring, in one sentence (fetch's help).
func (l Limits) String() string {
	size := func(n int64) string {
		if n >= 1<<30 && n%(1<<30) == 0 {
			return fmt.Sprintf("%d GiB", n>>30)
		}
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d new objects, %s for one object once inflated, %s for all of "+
		"them, a path of %d components or %d bytes, %d entries in a tree, a checkout of one of "+
		"its trees of %d files or %s", l.Objects, size(l.ObjectSize), size(l.TotalSize),
		l.Depth, l.PathBytes, l.TreeEntries, l.CheckoutFiles, size(l.CheckoutSize))
}
