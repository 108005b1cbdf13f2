package egress

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/config"
)

// Row is one granted port in force (allow --list --json: a list of these;
// the shape is in docs/profiles-and-elevation.md).
type Row struct {
	Dest        string    `json:"destination"`
	Port        uint16    `json:"port"`
	SecondsLeft int64     `json:"seconds_left"`
	Expires     time.Time `json:"expires"`
	Reason      string    `json:"reason"` // from the audit log; empty when no record matches
	Left        string    `json:"-"`      // SecondsLeft as 1h30m
}

// Grants lists the grants in force in the sandbox (task "") or a task,
// each with its reason from the audit log.
func (p *Project) Grants(ctx context.Context, task string) ([]Row, error) {
	out, err := p.Egress(ctx, p.Dir, task, "grants")
	if err != nil {
		return nil, fmt.Errorf("listing the grants: %w", err)
	}
	rows, err := parseGrants(out, p.Now().UTC())
	if err != nil {
		return nil, err
	}
	path, err := p.AuditPath()
	if err != nil {
		return nil, err
	}
	recs, err := audit.Read(path, time.Time{})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].Reason = reasonOf(recs, task, rows[i])
	}
	return rows, nil
}

// parseGrants reads the egress's `grants`: PREFIX PORT SECONDS_LEFT lines,
// then NAME PORT SECONDS_LEFT for the granted names.
func parseGrants(out string, now time.Time) ([]Row, error) {
	rows := []Row{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		bad := fmt.Errorf("the egress listed an unexpected grant %+q", line)
		if len(f) != 3 {
			return nil, bad
		}
		dst, err := grantedDest(f[0])
		if err != nil {
			return nil, bad
		}
		port, err1 := strconv.ParseUint(f[1], 10, 16)
		left, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || port == 0 || left < 0 {
			return nil, bad
		}
		d := time.Duration(left) * time.Second
		rows = append(rows, Row{Dest: dst, Port: uint16(port), SecondsLeft: left,
			Expires: now.Add(d), Left: config.FormatTaskDuration(d)})
	}
	return rows, nil
}

// grantedDest reads a destination as the egress lists it: an address, a
// CIDR, or a name as the egress takes it.
func grantedDest(s string) (string, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.String(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()).String(), nil
	}
	name, err := config.GrantName(s)
	if err != nil || name != s {
		return "", fmt.Errorf("not a destination: %+q", s)
	}
	return name, nil
}

// grantSlack is how much later a grant may expire in the egress than its
// audit record says: the record's clock starts when allow starts, the
// egress's when it receives the grant, seconds later on a loaded machine.
const grantSlack = 15 * time.Second

// reasonOf is the reason of the last successful grant of the task that
// covers r and has not expired.
func reasonOf(recs []audit.Record, task string, r Row) string {
	for i := len(recs) - 1; i >= 0; i-- {
		rec := recs[i]
		if rec.Event == audit.Grant && rec.Result == audit.OK && rec.Task == task && rec.Dest == r.Dest &&
			slices.Contains(rec.Ports, r.Port) && rec.Expires != nil && !rec.Expires.Before(r.Expires.Add(-grantSlack)) {
			return rec.Reason
		}
	}
	return ""
}
