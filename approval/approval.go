// Package approval is the host's side of the agent's requests for grants
// (docs/approvals.md): the egress's request endpoint spools what the agent
// asks (firewall.RequestSpool), and a person lists the requests of the
// sandbox and its tasks (List), approves one, which grants exactly what
// agentbox allow would (egress.Project.Allow: the same limits, the same
// kernel expiry, the same audit record, with the request's ID), or denies
// it. The answer goes back to the egress (its entrypoint's answer), where
// the agent reads it. Everything of a request is the agent's: parsed
// strictly here, printed only through internal/termsafe by the commands.
package approval

import (
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/egress"
	"github.com/agentbox-dev/agentbox/firewall"
)

// States of a request.
const (
	Pending  = "pending"
	Approved = "approved"
	Denied   = "denied"
	TimedOut = "timed-out"
)

// Request is one request of the agent's, as agentbox requests --json
// lists it.
type Request struct {
	ID       string     `json:"id"`
	Task     string     `json:"task,omitempty"` // empty: the sandbox
	Time     time.Time  `json:"time"`
	Expires  time.Time  `json:"expires"` // when it times out unanswered
	Dest     string     `json:"destination"`
	Seconds  int64      `json:"duration_seconds"` // the duration the agent wished
	Reason   string     `json:"reason"`           // the agent's, as it wrote it
	State    string     `json:"state"`            // pending, approved, denied, timed-out
	Until    *time.Time `json:"until,omitempty"`  // approved: the grant's end
	Policy   bool       `json:"policy,omitempty"` // approved into agentbox.yaml's allowlist: no end
	Note     string     `json:"note,omitempty"`   // denied: why
	Duration string     `json:"-"`                // Seconds as 1h30m
}

var idRE = regexp.MustCompile(`^r[0-9a-f]{12}$`)

// ValidID tells whether id is a request's ID as the endpoint makes them.
func ValidID(id string) bool { return idRE.MatchString(id) }

// Parse reads the egress's requests (the entrypoint's requests: a
// "request ID" line, the spool file's KEY VALUE lines, optionally "answer"
// and the answer's lines, an empty line) of task at now.
func Parse(out, task string, now time.Time) ([]Request, error) {
	var reqs []Request
	for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		r, err := parseBlock(block, task, now)
		if err != nil {
			return nil, fmt.Errorf("the egress listed a malformed request: %w", err)
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

// parseBlock reads one request and its answer.
func parseBlock(block, task string, now time.Time) (Request, error) {
	lines := strings.Split(block, "\n")
	head, ok := strings.CutPrefix(lines[0], "request ")
	if !ok || !ValidID(head) {
		return Request{}, fmt.Errorf("%+q is no request line", lines[0])
	}
	req, ans := map[string]string{}, map[string]string{}
	into, answered := req, false
	for _, line := range lines[1:] {
		if line == "answer" && !answered {
			into, answered = ans, true
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		if _, dup := into[k]; dup {
			return Request{}, fmt.Errorf("request %s: %+q twice", head, k)
		}
		into[k] = v
	}
	r, err := fromFields(head, req, task)
	if err != nil {
		return Request{}, fmt.Errorf("request %s: %w", head, err)
	}
	if err := r.answer(ans, now); err != nil {
		return Request{}, fmt.Errorf("request %s: %w", head, err)
	}
	return r, nil
}

// fromFields checks a spool file's fields.
func fromFields(id string, f map[string]string, task string) (Request, error) {
	if f["v"] != "1" || f["id"] != id {
		return Request{}, errors.New("not a request of version 1 under its ID")
	}
	t, err1 := strconv.ParseInt(f["time"], 10, 64)
	exp, err2 := strconv.ParseInt(f["expires"], 10, 64)
	secs, err3 := strconv.ParseInt(f["seconds"], 10, 64)
	reason, err4 := hex.DecodeString(f["reason"])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Request{}, err
	}
	if secs < 1 || secs > firewall.GrantMaxSeconds || exp < t || len(reason) > audit.MaxReason || len(reason) == 0 {
		return Request{}, errors.New("a duration, time or reason out of bounds")
	}
	if _, err := egress.ParseDest(f["dest"]); err != nil {
		return Request{}, err
	}
	return Request{ID: id, Task: task, Time: time.Unix(t, 0).UTC(), Expires: time.Unix(exp, 0).UTC(), Dest: f["dest"],
		Seconds: secs, Reason: string(reason), Duration: config.FormatTaskDuration(time.Duration(secs) * time.Second)}, nil
}

// answer sets r's state from its answer's fields (none: pending, or
// timed out at now).
func (r *Request) answer(a map[string]string, now time.Time) error {
	if len(a) == 0 {
		r.State = Pending
		if !now.Before(r.Expires) {
			r.State = TimedOut
		}
		return nil
	}
	until, err := strconv.ParseInt(a["until"], 10, 64)
	note, nerr := hex.DecodeString(a["note"])
	if err != nil || nerr != nil || (a["state"] != Approved && a["state"] != Denied) {
		return errors.New("a malformed answer")
	}
	r.State, r.Note = a["state"], string(note)
	switch {
	case r.State == Approved && until == 0: // added to the policy (ApproveIntoPolicy)
		r.Policy = true
	case r.State == Approved:
		u := time.Unix(until, 0).UTC()
		r.Until = &u
	}
	return nil
}
