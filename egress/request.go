package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/config"
)

// Request is a grant asked for: a destination, for how long, and why (as
// audit.ClipReason keeps it).
type Request struct {
	Dest
	For    time.Duration
	Reason string
	// Asked and AskedAt are the agent's request that a person approved
	// (agentbox approve): its ID and time, for the audit record.
	Asked   string
	AskedAt *time.Time
}

// ParseRequest reads a grant asked for as agentbox allow's command line
// writes it: the destination (ParseDest), how long (--for:
// config.ParseTaskDuration) and why (--reason, as audit.ClipReason keeps
// it; it must not be blank). Every error is a malformed request, named by
// allow's flags; the limits of a profile are Check's.
func ParseRequest(dest, duration, reason string) (Request, error) {
	d, err := ParseDest(dest)
	if err != nil {
		return Request{}, err
	}
	if duration == "" {
		return Request{}, errors.New("--for is required: how long the grant lasts, such as 30m or 1h")
	}
	r := Request{Dest: d, Reason: audit.ClipReason(reason)}
	if r.For, err = config.ParseTaskDuration(duration); err != nil {
		return Request{}, fmt.Errorf("invalid --for: %w", err)
	}
	if r.Reason == "" {
		return Request{}, fmt.Errorf("--reason is required: say why the sandbox needs %s (it goes to the audit log)", d)
	}
	return r, nil
}

// Check applies profile p's elevation section of agentbox.yaml and the
// built-in refusals to r.
func (r Request) Check(cfg *config.Config, p *config.Profile) error {
	if !p.Elevate.Allowed {
		if at := p.Elevate.AllowedPos; at.Line > 0 {
			return fmt.Errorf("elevation is not allowed in profile %s (elevation.allowed is false at %s:%d:%d)", p.Name, config.ConfigFile, at.Line, at.Col)
		}
		return fmt.Errorf("elevation is not allowed in profile %s (a locked profile permits none unless its elevation.allowed says so)", p.Name)
	}
	cfg = elevationConfig(cfg, p)
	if r.For > cfg.ElevationMax {
		where := "(the default)"
		if at := cfg.ElevationMaxPos; at.Line > 0 {
			where = fmt.Sprintf("(at %s:%d:%d)", config.ConfigFile, at.Line, at.Col)
		}
		return fmt.Errorf("--for %s is over elevation.max_duration %s %s", config.FormatTaskDuration(r.For), config.FormatTaskDuration(cfg.ElevationMax), where)
	}
	refused := config.RefusedGrant
	if r.Name != "" {
		refused = func(cfg *config.Config, _ netip.Prefix) error { return config.RefusedName(cfg, r.Name) }
	}
	if err := refused(cfg, r.Prefix); err != nil {
		return fmt.Errorf("refusing to grant: %w", err)
	}
	return nil
}

// elevationConfig is cfg with profile p's elevation limits.
func elevationConfig(cfg *config.Config, p *config.Profile) *config.Config {
	c := *cfg
	c.ElevationAllowed, c.ElevationAllowedPos = p.Elevate.Allowed, p.Elevate.AllowedPos
	c.ElevationMax, c.ElevationMaxPos = p.Elevate.Max, p.Elevate.MaxPos
	c.ElevationNever, c.ElevationNeverPos = p.Elevate.Never, p.Elevate.NeverPos
	c.ElevationNeverNames, c.ElevationNeverNamesPos = p.Elevate.NeverNames, p.Elevate.NeverNamesPos
	return &c
}
