package audit

import (
	"slices"
	"time"
)

// grantKey is one granted port of a destination in the sandbox or a task:
// what the egress adds, renews and removes as one element.
type grantKey struct {
	task, dest string
	port       uint16
}

// WithExpiries returns recs (the log, oldest first) with an expire record
// at the expiry of each successful grant's ports that neither a revoke
// ended nor a later grant renewed before it, once that expiry is at or
// before now; sorted by time. The kernel removes an expired element by
// itself, so the log has no line for it. (A sandbox stopped earlier lost
// its grants then: an expiry says when a grant ended at the latest.)
func WithExpiries(recs []Record, now time.Time) []Record {
	live := map[grantKey]int{}    // the grant record in force for each port
	expired := map[int][]uint16{} // grant record -> its ports that expired
	expire := func(k grantKey, at time.Time) {
		if i, ok := live[k]; ok && !recs[i].Expires.After(at) {
			expired[i] = append(expired[i], k.port)
		}
		delete(live, k)
	}
	for i, r := range recs {
		if r.Result != OK || (r.Event == Grant && r.Expires == nil) {
			continue
		}
		for _, p := range r.Ports {
			k := grantKey{r.Task, r.Dest, p}
			switch r.Event {
			case Grant:
				expire(k, r.Time)
				live[k] = i
			case Revoke, PolicyAdd:
				// policy add leaves the element without an end.
				expire(k, r.Time)
			}
		}
	}
	for k := range live {
		expire(k, now)
	}
	out := slices.Clone(recs)
	for i, ports := range expired {
		g := recs[i]
		slices.Sort(ports)
		out = append(out, Record{Time: *g.Expires, Event: Expire, Project: g.Project, Sandbox: g.Sandbox,
			Task: g.Task, Dest: g.Dest, Ports: ports, Reason: g.Reason, Request: g.Request, Result: OK})
	}
	slices.SortStableFunc(out, func(a, b Record) int { return a.Time.Compare(b.Time) })
	return out
}

// ReadWithExpiries reads the audit log at path with the expiries derived
// at now (WithExpiries), and returns the records at or after since (an
// empty list, not nil, when none is): agentbox audit. The whole log is
// read, as a grant before since may expire after it.
func ReadWithExpiries(path string, since, now time.Time) ([]Record, error) {
	all, err := Read(path, time.Time{})
	if err != nil {
		return nil, err
	}
	recs := []Record{}
	for _, r := range WithExpiries(all, now) {
		if !r.Time.Before(since) {
			recs = append(recs, r)
		}
	}
	return recs, nil
}
