package gitgate

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
