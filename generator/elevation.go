package generator

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/validate"
)

// The elevation section: the limits of agentbox allow, which grants an
// address or CIDR for a while. It changes none of the generated files.

// DefaultElevationMax is the longest grant when elevation.max_duration is
// not written.
const DefaultElevationMax = time.Hour

// elevation checks the elevation section and applies its defaults.
func (c *checker) elevation(w wireElevation, cfg *Config) {
	cfg.ElevationAllowed = w.Allowed == nil || *w.Allowed
	cfg.ElevationAllowedPos = c.pos["elevation.allowed"]
	cfg.ElevationMax, _ = c.taskDuration("elevation.max_duration", w.MaxDuration, DefaultElevationMax)
	cfg.ElevationMaxPos = c.pos["elevation.max_duration"]
	for i, s := range entries(c, "elevation.never", w.Never) {
		path := fmt.Sprintf("elevation.never[%d]", i)
		p, err := validate.CIDR(s)
		if err != nil {
			c.fail(path, err)
			continue
		}
		cfg.ElevationNever = append(cfg.ElevationNever, p)
		cfg.ElevationNeverPos = append(cfg.ElevationNeverPos, c.pos[path])
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
