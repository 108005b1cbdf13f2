package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
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

// ForgeNote says what a grant of a name leaves refused in profile p: a
// forge of git.forges keeps its git on the gateway's front door, and the
// gateway refuses direct TLS and HTTP to the forge's name itself on every
// port it listens on, grant or not (docs/gateway.md, "Pushes scoped"); the
// names below it are granted. "" when that does not apply.
func (r Request) ForgeNote(cfg *config.Config, p *config.Profile) string {
	if r.Name == "" {
		return ""
	}
	pol := generator.ProfilePolicy(cfg, p)
	for _, f := range generator.ProfileForges(cfg, pol) {
		if f.Direct || f.Host != r.Name {
			continue
		}
		ports, err := firewall.GatewayPortsOf(pol)
		if err != nil {
			return ""
		}
		var held []string
		for _, port := range r.Ports {
			if slices.Contains(ports, port) {
				held = append(held, strconv.Itoa(int(port)))
			}
		}
		if len(held) == 0 {
			return ""
		}
		return fmt.Sprintf("note: %s itself stays refused on port %s: it is a forge of git.forges, whose git goes through the gateway's front door, and the gateway refuses direct connections to it, grant or not; the grant reaches the names below it", r.Name, strings.Join(held, ","))
	}
	return ""
}
