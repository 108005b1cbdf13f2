package generator

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/validate"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// The elevation section: the limits of agentbox allow, which grants an
// address or CIDR for a while. It changes none of the generated files.

// DefaultElevationMax is the longest grant when elevation.max_duration is
// not written.
const DefaultElevationMax = time.Hour

// elevation checks the elevation section and applies its defaults.
func (c *checker) elevation(w wireElevation, cfg *Config) {
	e := Elevation{Allowed: true, Max: DefaultElevationMax}
	c.elevationRules("elevation", w, &e)
	cfg.ElevationAllowed, cfg.ElevationAllowedPos = e.Allowed, e.AllowedPos
	cfg.ElevationMax, cfg.ElevationMaxPos = e.Max, e.MaxPos
	cfg.ElevationNever, cfg.ElevationNeverPos = e.Never, e.NeverPos
}

// Elevation is what agentbox allow may grant under a profile.
type Elevation struct {
	Allowed    bool
	AllowedPos yamlpos.Pos // zero when not written
	Max        time.Duration
	MaxPos     yamlpos.Pos // zero when not written
	Never      []netip.Prefix
	NeverPos   []yamlpos.Pos
}

// elevationRules checks an elevation section at path and overwrites what
// it writes in e.
func (c *checker) elevationRules(path string, w wireElevation, e *Elevation) {
	if w.Allowed != nil {
		e.Allowed, e.AllowedPos = *w.Allowed, c.pos[path+".allowed"]
	}
	if w.MaxDuration != nil {
		e.Max, _ = c.taskDuration(path+".max_duration", w.MaxDuration, DefaultElevationMax)
		e.MaxPos = c.pos[path+".max_duration"]
	}
	if w.Never == nil {
		return
	}
	e.Never, e.NeverPos = nil, nil
	for i, s := range entries(c, path+".never", w.Never) {
		at := fmt.Sprintf("%s.never[%d]", path, i)
		p, err := validate.CIDR(s)
		if err != nil {
			c.fail(at, err)
			continue
		}
		e.Never = append(e.Never, p)
		e.NeverPos = append(e.NeverPos, c.pos[at])
	}
}

// RefusedGrant says why p may not be granted: it overlaps one of
// agentbox's special ranges (firewall.SpecialRanges, always refused) or an
// entry of elevation.never. It returns nil when p may be granted.
func RefusedGrant(cfg *Config, p netip.Prefix) error {
	for _, s := range firewall.SpecialRanges() {
		if s.Prefix.Overlaps(p) {
			return fmt.Errorf("%s overlaps %s (%s), which agentbox never grants", p, s.Prefix, s.Why)
		}
	}
	for i, n := range cfg.ElevationNever {
		if n.Overlaps(p) {
			at := cfg.ElevationNeverPos[i]
			return fmt.Errorf("%s overlaps %s, which elevation.never forbids (%s:%d:%d)", p, n, ConfigFile, at.Line, at.Col)
		}
	}
	return nil
}
