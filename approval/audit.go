package approval

import (
	"context"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/egress"
)

// AuditLog is agentbox audit: the requests of p's sandbox and of its
// running tasks are listed first, so that one left unanswered until it
// timed out is recorded (a timed-out event at its expiry) before the log
// is read. An egress that does not run is not asked (its requests went
// with it); a failure of that listing is returned as warn, and the log is
// read all the same.
func AuditLog(ctx context.Context, p *egress.Project, since time.Time) (recs []audit.Record, warn, err error) {
	_, _, warn = Local(p).List(ctx)
	recs, err = p.AuditLog(since)
	return recs, warn, err
}
