// Package egress is the running sandbox's egress container as agentbox
// changes and reads it: time-limited grants of an address, a CIDR or a
// name (allow, revoke, the grants in force), the allowlist's entries
// applied live (policy add and remove), each change written first to the
// audit log; and what the firewall refused, read from the egress log
// (blocked). The changes go through the egress entrypoint's subcommands
// (agentbox-egress grant, grant-name, revoke, revoke-name, grants,
// policies), run by a Runner the command gives (sandbox runs docker).
package egress

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// Runner runs the egress entrypoint (firewall.EntrypointPath) with args in
// the egress container of the sandbox in dir, or of its task when task is
// not empty, and returns what it printed. Its error is the entrypoint's
// one-line message. sandbox.RunEgress is the real one.
type Runner func(ctx context.Context, dir, task string, args ...string) (string, error)

// Project is a project's sandbox and tasks, whose egress containers take
// the changes, and the audit log that records each change.
type Project struct {
	Dir  string // the project's directory
	Name string // its sandbox's name (agentbox.yaml's name)
	// Config is its agentbox.yaml, whose profiles' elevation Allow checks.
	Config *config.Config
	Egress Runner
	// Profile returns the profile that the sandbox (task "") or a task
	// runs.
	Profile func(ctx context.Context, dir, task string) (string, error)
	// AuditDir is the directory of the audit logs (audit.StateDir).
	AuditDir func() (string, error)
	// User names the host user (audit.HostUser).
	User func() string
	Now  func() time.Time
	// Note, when set, gets what Allow has to say of a grant it made (a
	// forge's name that stays refused: Request.ForgeNote).
	Note func(string)
}

// AuditPath is the project's audit log (audit.Path).
func (p *Project) AuditPath() (string, error) {
	dir, err := p.AuditDir()
	if err != nil {
		return "", err
	}
	return audit.Path(dir, p.Dir, p.Name)
}

// AuditLog is the project's audit log with the expiries derived now
// (audit.ReadWithExpiries), from since on, each grant's Duration written:
// what agentbox audit prints.
func (p *Project) AuditLog(since time.Time) ([]audit.Record, error) {
	path, err := p.AuditPath()
	if err != nil {
		return nil, err
	}
	recs, err := audit.ReadWithExpiries(path, since, p.Now())
	for i := range recs {
		if recs[i].Seconds > 0 {
			recs[i].Duration = config.FormatTaskDuration(time.Duration(recs[i].Seconds) * time.Second)
		}
	}
	return recs, err
}

// record starts an audit record of event on d in the sandbox (task "") or
// a task.
func (p *Project) record(task, event string, d Dest) audit.Record {
	return audit.Record{Time: p.Now().UTC(), Event: event, User: p.User(), Project: audit.ProjectDir(p.Dir),
		Sandbox: p.Name, Task: task, Dest: d.String(), Ports: d.Ports}
}

// logged records rec in the audit log with do's result (audit.Logged).
func (p *Project) logged(rec *audit.Record, do func() error) error {
	path, err := p.AuditPath()
	if err != nil {
		return err
	}
	return audit.Logged(path, rec, do)
}

// Allow grants r in the sandbox (task "") or a task until the returned
// time, after the checks of the profile it runs (Request.Check). Every
// grant asked for is recorded, with why it was refused when it was: no
// sandbox, the profile's elevation, or the egress.
func (p *Project) Allow(ctx context.Context, task string, r Request) (time.Time, error) {
	rec := p.record(task, audit.Grant, r.Dest)
	expires := rec.Time.Add(r.For)
	rec.Seconds, rec.Expires, rec.Reason = int64(r.For/time.Second), &expires, r.Reason
	rec.Request, rec.Asked = r.Asked, r.AskedAt
	asked := false
	err := p.logged(&rec, func() error {
		name, err := p.Profile(ctx, p.Dir, task)
		if err != nil {
			return err
		}
		prof, err := sandbox.ProfileOf(p.Config, name)
		if err != nil {
			return err
		}
		if err := r.Check(p.Config, prof); err != nil {
			return err
		}
		asked = true
		_, err = p.Egress(ctx, p.Dir, task, r.command("grant"), r.String(), PortArg(r.Ports), strconv.FormatInt(rec.Seconds, 10))
		if note := r.ForgeNote(p.Config, prof); err == nil && note != "" && p.Note != nil {
			p.Note(note)
		}
		return err
	})
	if err != nil && asked {
		return expires, fmt.Errorf("granting %s: %w", r.Dest, err)
	}
	return expires, err
}

// Revoke ends the grant of d in the sandbox (task "") or a task now, and
// records it.
func (p *Project) Revoke(ctx context.Context, task string, d Dest) error {
	rec := p.record(task, audit.Revoke, d)
	err := p.logged(&rec, func() error {
		_, err := p.Egress(ctx, p.Dir, task, d.command("revoke"), d.String(), PortArg(d.Ports))
		return err
	})
	if err != nil {
		return fmt.Errorf("revoking %s: %w", d, err)
	}
	return nil
}

// AddLive adds d to the running sandbox's live sets without an end (an
// entry of the allowlist, policy add), and records it.
func (p *Project) AddLive(ctx context.Context, d Dest) error { return p.addLiveFor(ctx, d, nil) }

// addLiveFor is AddLive, its record naming the request it answers when
// asked is not nil.
func (p *Project) addLiveFor(ctx context.Context, d Dest, asked *Asked) error {
	rec := p.record("", audit.PolicyAdd, d)
	if asked != nil {
		at := asked.Time.UTC()
		rec.Request, rec.Asked, rec.Reason = asked.ID, &at, asked.Reason
	}
	return p.logged(&rec, func() error {
		_, err := p.Egress(ctx, p.Dir, "", d.command("grant"), d.String(), PortArg(d.Ports), "0")
		return err
	})
}

// RemoveLive takes d out of the running sandbox's live sets (policy
// remove), and records it.
func (p *Project) RemoveLive(ctx context.Context, d Dest) error {
	rec := p.record("", audit.PolicyRemove, d)
	return p.logged(&rec, func() error {
		_, err := p.Egress(ctx, p.Dir, "", d.command("revoke"), d.String(), PortArg(d.Ports))
		return err
	})
}

// Live is what AddLive gave the running sandbox since it started, as the
// egress's "policies" lists it: a set of "DEST PORT".
func (p *Project) Live(ctx context.Context) (Live, error) {
	out, err := p.Egress(ctx, p.Dir, "", "policies")
	if err != nil {
		return nil, err
	}
	live := Live{}
	for _, line := range strings.Split(out, "\n") {
		live[strings.TrimSpace(line)] = true
	}
	return live, nil
}

// Live is a set of "DEST PORT" given to the running sandbox live.
type Live map[string]bool

// All tells whether every port of d is in l.
func (l Live) All(d Dest) bool {
	for _, p := range d.Ports {
		if !l[fmt.Sprintf("%s %d", d, p)] {
			return false
		}
	}
	return len(d.Ports) > 0
}
