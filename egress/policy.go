package egress

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// PolicyChange is an edit of an allowlist in agentbox.yaml, as agentbox
// policy add and remove ask for it.
type PolicyChange struct {
	// Profile is the profile whose allowlist to edit, one of the
	// project's: "" for the one the sandbox runs, else agentbox.yaml's
	// default.
	Profile string
	Entries []config.PolicyEntry
	Remove  bool
	// NoApply edits agentbox.yaml and the files only, leaving the running
	// sandbox as it is.
	NoApply bool
	// Request is the agent's request this change answers (agentbox
	// approve --policy): its ID, time and reason go into the audit
	// records of the live change.
	Request *Asked
}

// Asked is a request of the agent's, as an audit record names it.
type Asked struct {
	ID     string
	Time   time.Time
	Reason string
}

// ParsePolicyEntries reads entries of an allowlist (config.ParsePolicyEntry)
// on ports, written PORT[,PORT] as policy add's --ports takes them ("":
// the list's own ports). Every error is a malformed entry or port.
func ParsePolicyEntries(args []string, ports string) ([]config.PolicyEntry, error) {
	var p []uint16
	if ports != "" {
		var err error
		if p, err = ParsePorts(ports); err != nil {
			return nil, fmt.Errorf("invalid --ports %q: %w", ports, err)
		}
	}
	var out []config.PolicyEntry
	for _, a := range args {
		e, err := config.ParsePolicyEntry(a, p)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Unapplied says why an edit that changed agentbox.yaml did not reach the
// running sandbox.
type Unapplied int

const (
	Applied      Unapplied = iota // it did (also when nothing changed)
	NotAsked                      // PolicyChange.NoApply
	NoSandbox                     // no sandbox runs: PolicyResult.Why says why
	OtherProfile                  // the sandbox runs a profile whose allowlist the edit does not change
)

// PolicyResult is what ChangePolicy did: the edit, and what the running
// sandbox got of it.
type PolicyResult struct {
	*generator.PolicyEdit
	// Running is the profile the sandbox runs; "" when none does (Why
	// says why) or when it was not asked (NoApply with a Profile).
	Running   string
	Why       error
	Unapplied Unapplied
	// Live are the entries added to the running sandbox's live sets, or
	// taken out of them, in order.
	Live []LiveEntry
	// Baked are the entries removed that the running egress image holds:
	// the egress cannot drop them live, only a recreate of the sandbox
	// (agentbox up) does.
	Baked []string
}

// LiveEntry is an entry of the allowlist as the running egress takes it.
type LiveEntry struct {
	Entry config.PolicyEntry // as agentbox.yaml writes it
	Dest  Dest               // with the ports it has under the running profile
}

// ChangePolicy edits the allowlist of c.Profile in agentbox.yaml in place
// and writes it with the generated files, all or nothing
// (generator.EditPolicy); then, unless c.NoApply, applies the change to
// the running sandbox when it runs a profile that takes that allowlist:
// an added entry goes to the egress's live sets without an end (AddLive),
// a removed one leaves them when AddLive put it there since the sandbox
// started (RemoveLive), else it is Baked. When every change was made live,
// the sandbox's record of the files it runs moves on with them
// (sandbox.RecordLive), so that the stale warning says nothing of the
// edit. The result holds what was done, also with an error. This is the
// whole of policy add and remove, and what an approval that adds to the
// policy makes.
func (p *Project) ChangePolicy(ctx context.Context, c PolicyChange) (*PolicyResult, error) {
	r := &PolicyResult{}
	if p.Profile != nil && (!c.NoApply || c.Profile == "") { // the running profile chooses the list
		r.Running, r.Why = p.Profile(ctx, p.Dir, "")
	}
	before, _ := sandbox.FilesHash(p.Dir)
	ed, err := generator.EditPolicy(p.Dir, p.Config, cmp.Or(c.Profile, r.Running, p.Config.DefaultProfile), c.Entries, c.Remove)
	r.PolicyEdit = ed
	switch {
	case err != nil || len(ed.Changed) == 0:
		return r, err
	case c.NoApply:
		r.Unapplied = NotAsked
	case r.Running == "":
		r.Unapplied = NoSandbox
	case !config.PolicyUses(ed.Config, r.Running, ed.Section):
		r.Unapplied = OtherProfile
	case c.Remove:
		err = p.removeLive(ctx, r)
	default:
		err = p.addLive(ctx, r, c.Request)
	}
	if err != nil || r.Unapplied != Applied || len(r.Baked) > 0 {
		return r, err
	}
	return r, sandbox.RecordLive(p.Dir, ed.Config.Name, before)
}

// addLive adds r's changed entries to the running egress's live sets,
// without an end, and records them (with the request they answer, when
// asked is not nil).
func (p *Project) addLive(ctx context.Context, r *PolicyResult, asked *Asked) error {
	for _, e := range r.Changed {
		dst := PolicyDest(e, config.PolicyPorts(r.Config, r.Running, e))
		if err := p.addLiveFor(ctx, dst, asked); err != nil {
			return fmt.Errorf("applying %s to the running sandbox: %w (agentbox.yaml has it: agentbox up applies it, recreating the containers)", e, err)
		}
		r.Live = append(r.Live, LiveEntry{e, dst})
	}
	return nil
}

// removeLive takes r's changed entries out of the running egress's live
// sets when AddLive put them there since it started (the egress lists
// them), and notes the others as Baked.
func (p *Project) removeLive(ctx context.Context, r *PolicyResult) error {
	live, err := p.Live(ctx)
	if err != nil {
		return fmt.Errorf("listing what the running sandbox was given live: %w (agentbox.yaml no longer has it: agentbox up applies that, recreating the containers)", err)
	}
	for _, e := range r.Changed {
		dst := PolicyDest(e, config.PolicyPorts(r.Config, r.Running, e))
		if !live.All(dst) {
			r.Baked = append(r.Baked, e.String())
			continue
		}
		if err := p.RemoveLive(ctx, dst); err != nil {
			return fmt.Errorf("removing %s from the running sandbox: %w (agentbox.yaml no longer has it: agentbox up applies that)", e, err)
		}
		r.Live = append(r.Live, LiveEntry{e, dst})
	}
	return nil
}
