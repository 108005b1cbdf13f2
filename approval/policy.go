package approval

import (
	"context"
	"fmt"

	"github.com/agentbox-dev/agentbox/egress"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// ApproveIntoPolicy answers request id by adding its destination to the
// allowlist of the profile the sandbox runs, as agentbox policy add does:
// agentbox.yaml and the generated files edited (a change to commit and
// review), the running sandbox changed live, the audit record naming the
// request. The agent learns: approved, with no end. Only a pending
// request of the sandbox: a task runs the files it started with (approve
// grants for it; policy add lists the destination for the tasks to
// come). Nothing is answered when the edit or its live change fails, so
// the request stays pending. One answer at a time, as Approve.
func (h *Host) ApproveIntoPolicy(ctx context.Context, id string) (r Request, res *egress.PolicyResult, err error) {
	err = h.answering(func() error {
		r, res, err = h.approveIntoPolicy(ctx, id)
		return err
	})
	return r, res, err
}

func (h *Host) approveIntoPolicy(ctx context.Context, id string) (Request, *egress.PolicyResult, error) {
	r, err := h.Find(ctx, id)
	if err != nil {
		return r, nil, err
	}
	if r.State != Pending {
		return r, nil, fmt.Errorf("request %s is %s: only a pending request is approved (the agent may ask again)", id, r.State)
	}
	d, err := egress.ParseDest(r.Dest)
	if err != nil {
		return r, nil, err
	}
	if r.Task != "" {
		return r, nil, fmt.Errorf("request %s is task %s's, which runs the files it started with: agentbox approve %s grants it for the task; agentbox policy add %s --ports %s lists it for the tasks to come",
			id, termsafe.String(r.Task), id, termsafe.String(d.String()), egress.PortArg(d.Ports))
	}
	entries, err := egress.ParsePolicyEntries([]string{d.String()}, egress.PortArg(d.Ports))
	if err != nil {
		return r, nil, err
	}
	res, err := h.P.ChangePolicy(ctx, egress.PolicyChange{Entries: entries,
		Request: &egress.Asked{ID: r.ID, Time: r.Time, Reason: r.Reason}})
	switch {
	case err != nil:
		return r, res, err
	case len(res.Changed) == 0:
		return r, res, fmt.Errorf("the allowlist of profile %s has %s already: the request stays pending (agentbox approve %s grants it instead)",
			res.Running, termsafe.String(d.String()), id)
	case res.Unapplied != egress.Applied:
		return r, res, fmt.Errorf("agentbox.yaml lists %s now, but the running sandbox did not take it (%s): the request stays pending; agentbox up applies the edit",
			termsafe.String(d.String()), unapplied(res))
	}
	r.State, r.Policy = Approved, true
	r.Note = "added to agentbox.yaml's allowlist (profile " + res.Running + "): no end"
	return r, res, h.answer(ctx, r, Approved, 0, r.Note)
}

// unapplied says why res did not reach the running sandbox.
func unapplied(res *egress.PolicyResult) string {
	switch {
	case res.Unapplied == egress.NoSandbox && res.Why != nil:
		return res.Why.Error()
	case res.Unapplied == egress.OtherProfile:
		return "it runs profile " + res.Running + ", whose allowlist this is not"
	}
	return "not applied"
}
