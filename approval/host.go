package approval

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/egress"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/agentbox-dev/agentbox/task"
)

// Host is a project's sandbox and its running tasks, whose egresses hold
// requests.
type Host struct {
	P *egress.Project
	// Tasks names the tasks whose egress runs on this machine.
	Tasks func() ([]string, error)

	audited map[string]bool // the timed-out requests seen in the audit log
}

// Skipped is an egress whose requests could not be read: one not running
// has none (its spool went with it).
type Skipped struct {
	Task string // empty: the sandbox
	Err  error
}

// List returns the requests of the sandbox and of each task, oldest first,
// and the egresses it could not ask.
func (h *Host) List(ctx context.Context) ([]Request, []Skipped, error) {
	tasks, err := h.Tasks()
	if err != nil {
		return nil, nil, err
	}
	var all []Request
	var skipped []Skipped
	for _, task := range append([]string{""}, tasks...) {
		out, err := h.P.Egress(ctx, h.P.Dir, task, "requests")
		if err != nil {
			skipped = append(skipped, Skipped{task, err})
			continue
		}
		reqs, err := Parse(out, task, h.P.Now())
		if err != nil {
			return nil, nil, err
		}
		all = append(all, reqs...)
	}
	slices.SortStableFunc(all, func(a, b Request) int { return a.Time.Compare(b.Time) })
	return all, skipped, h.auditTimedOut(all)
}

// auditTimedOut appends a timed-out record to the audit log for each
// request of reqs that timed out and has none there yet, at its expiry:
// the end of the story of a request nobody answered. Whichever agentbox
// process sees it first (requests, watch, approve, deny, audit) writes it.
func (h *Host) auditTimedOut(reqs []Request) error {
	var path string
	for _, r := range reqs {
		if r.State != TimedOut || h.audited[r.ID] {
			continue
		}
		d, err := egress.ParseDest(r.Dest)
		if err != nil {
			return err
		}
		if path == "" {
			if path, err = h.P.AuditPath(); err != nil {
				return err
			}
		}
		rec := audit.Record{Time: r.Expires, Event: audit.TimedOut, Project: audit.ProjectDir(h.P.Dir), Sandbox: h.P.Name,
			Task: r.Task, Dest: d.String(), Ports: d.Ports, Seconds: r.Seconds, Reason: r.Reason, Request: r.ID,
			Asked: &r.Time, Result: audit.OK}
		if _, err := audit.AppendUnless(path, r.Time, rec, func(o audit.Record) bool {
			return o.Event == audit.TimedOut && o.Request == r.ID
		}); err != nil {
			return err
		}
		if h.audited == nil {
			h.audited = map[string]bool{}
		}
		h.audited[r.ID] = true
	}
	return nil
}

// Find returns request id, wherever it waits.
func (h *Host) Find(ctx context.Context, id string) (Request, error) {
	if !ValidID(id) {
		return Request{}, fmt.Errorf("invalid request ID %q: agentbox requests lists them (r and 12 hexadecimal digits)", id)
	}
	reqs, skipped, err := h.List(ctx)
	if err != nil {
		return Request{}, err
	}
	for _, r := range reqs {
		if r.ID == id {
			return r, nil
		}
	}
	var errs []error
	for _, s := range skipped {
		errs = append(errs, s.Err)
	}
	return Request{}, errors.Join(append([]error{fmt.Errorf("no request %s in the sandbox or its running tasks", id)}, errs...)...)
}

// Approve grants request id as agentbox allow would, for its wished
// duration or dur when given, and tells the agent: approved until the
// grant's end, or denied with why the grant was refused (the profile's
// elevation, the never list). Only a pending request is approved.
// Two approvals of one request at the same moment grant once: this
// machine's agentbox processes answer the sandbox's requests one at a time
// (answering), and the second finds the request answered.
func (h *Host) Approve(ctx context.Context, id, dur string) (r Request, err error) {
	err = h.answering(func() error {
		r, err = h.approve(ctx, id, dur)
		return err
	})
	return r, err
}

func (h *Host) approve(ctx context.Context, id, dur string) (Request, error) {
	r, err := h.Find(ctx, id)
	if err != nil {
		return r, err
	}
	if r.State != Pending {
		return r, fmt.Errorf("request %s is %s: only a pending request is approved (the agent may ask again)", id, r.State)
	}
	if dur == "" {
		dur = config.FormatTaskDuration(time.Duration(r.Seconds) * time.Second)
	}
	g, err := egress.ParseRequest(r.Dest, dur, r.Reason)
	if err != nil {
		return r, err
	}
	g.Asked, g.AskedAt = r.ID, &r.Time
	until, gerr := h.P.Allow(ctx, r.Task, g)
	if gerr != nil {
		if err := h.answer(ctx, r, Denied, 0, "refused: "+gerr.Error()); err != nil {
			return r, errors.Join(gerr, err)
		}
		r.State, r.Note = Denied, "refused: "+gerr.Error()
		return r, gerr
	}
	r.State, r.Until = Approved, &until
	return r, h.answer(ctx, r, Approved, until.Unix(), "")
}

// Deny answers request id with a denial and why, and records it (one
// answer at a time, as Approve).
func (h *Host) Deny(ctx context.Context, id, why string) (r Request, err error) {
	err = h.answering(func() error {
		r, err = h.deny(ctx, id, why)
		return err
	})
	return r, err
}

func (h *Host) deny(ctx context.Context, id, why string) (Request, error) {
	r, err := h.Find(ctx, id)
	if err != nil {
		return r, err
	}
	if r.State == Approved || r.State == Denied {
		return r, fmt.Errorf("request %s is %s already", id, r.State)
	}
	why = audit.ClipReason(why)
	d, err := egress.ParseDest(r.Dest)
	if err != nil {
		return r, err
	}
	rec := audit.Record{Time: h.P.Now().UTC(), Event: audit.Deny, User: h.P.User(), Project: audit.ProjectDir(h.P.Dir),
		Sandbox: h.P.Name, Task: r.Task, Dest: d.String(), Ports: d.Ports, Seconds: r.Seconds, Reason: r.Reason,
		Request: r.ID, Asked: &r.Time, Note: why}
	path, err := h.P.AuditPath()
	if err != nil {
		return r, err
	}
	err = audit.Logged(path, &rec, func() error { return h.answer(ctx, r, Denied, 0, why) })
	r.State, r.Note = Denied, why
	return r, err
}

// answering runs do holding the lock of the sandbox's answers: a file
// beside its audit log (flock), which every agentbox process that
// approves or denies a request of the sandbox or its tasks on this
// machine takes, from finding the request pending to its answer.
func (h *Host) answering(do func() error) error {
	path, err := h.P.AuditPath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating the audit log's directory: %w", err)
	}
	f, err := os.OpenFile(strings.TrimSuffix(path, ".jsonl")+".answers.lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("locking the requests' answers: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking the requests' answers: %w", err)
	}
	return do()
}

// answer writes the answer to r in its egress, where the agent reads it.
func (h *Host) answer(ctx context.Context, r Request, state string, until int64, note string) error {
	note = audit.ClipReason(note)
	_, err := h.P.Egress(ctx, h.P.Dir, r.Task, "answer", r.ID, state, strconv.FormatInt(until, 10), hex.EncodeToString([]byte(note)))
	if err != nil {
		return fmt.Errorf("answering request %s: %w", r.ID, err)
	}
	return nil
}

// Local is p's sandbox with its running tasks, on this machine and on a
// cluster (p.Egress reaches a task's pod there).
func Local(p *egress.Project) *Host {
	return &Host{P: p, Tasks: func() ([]string, error) {
		if p == nil {
			return nil, nil
		}
		recs, err := task.List(p.Name)
		var names []string
		for _, r := range recs {
			if r.State == task.StateRunning {
				names = append(names, r.Name)
			}
		}
		return names, err
	}}
}

// Answered says what the answer to r was, escaped for a terminal.
func (r Request) Answered() string {
	where := "the sandbox"
	if r.Task != "" {
		where = "task " + r.Task
	}
	switch {
	case r.Policy:
		return fmt.Sprintf("approved %s: %s for %s: %s", r.ID, termsafe.String(r.Dest), where, termsafe.String(r.Note))
	case r.Until != nil:
		return fmt.Sprintf("approved %s: %s for %s, until %s", r.ID, termsafe.String(r.Dest), where, r.Until.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("denied %s: %s for %s", r.ID, termsafe.String(r.Dest), where)
}
