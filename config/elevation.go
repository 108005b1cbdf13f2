package config

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/validate"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// The elevation section: the limits of agentbox allow, which grants an
// address, a CIDR or a name for a while. Its never list is compiled into
// each profile's firewall program too (the kernel refuses it whatever the
// host-side check said); the rest changes no generated file.

// DefaultElevationMax is the longest grant when elevation.max_duration is
// not written.
const DefaultElevationMax = time.Hour

// MaxRequestTimeout is the longest elevation.request_timeout.
const MaxRequestTimeout = 24 * time.Hour

// elevation checks the elevation section and applies its defaults.
func (c *checker) elevation(w wireElevation, cfg *Config) {
	e := Elevation{Allowed: true, Max: DefaultElevationMax, RequestTimeout: firewall.DefaultRequestTimeout}
	c.elevationRules("elevation", w, &e)
	cfg.ElevationAllowed, cfg.ElevationAllowedPos = e.Allowed, e.AllowedPos
	cfg.ElevationMax, cfg.ElevationMaxPos = e.Max, e.MaxPos
	cfg.ElevationRequestTimeout, cfg.ElevationRequestTimeoutPos = e.RequestTimeout, e.RequestTimeoutPos
	cfg.ElevationNever, cfg.ElevationNeverPos = e.Never, e.NeverPos
	cfg.ElevationNeverNames, cfg.ElevationNeverNamesPos = e.NeverNames, e.NeverNamesPos
}

// Elevation is what agentbox allow may grant under a profile.
type Elevation struct {
	Allowed    bool
	AllowedPos yamlpos.Pos // zero when not written
	Max        time.Duration
	MaxPos     yamlpos.Pos // zero when not written
	// RequestTimeout is how long an agent's request waits for an answer.
	RequestTimeout    time.Duration
	RequestTimeoutPos yamlpos.Pos // zero when not written
	Never             []netip.Prefix
	NeverPos          []yamlpos.Pos
	NeverNames        []string // names of elevation.never (lower case, without "*.")
	NeverNamesPos     []yamlpos.Pos
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
	if w.RequestTimeout != nil {
		at := path + ".request_timeout"
		if d, ok := c.taskDuration(at, w.RequestTimeout, firewall.DefaultRequestTimeout); ok && d > MaxRequestTimeout {
			c.failf(at, "%s is over %s: the egress keeps a request for a day", FormatTaskDuration(d), FormatTaskDuration(MaxRequestTimeout))
		} else if ok {
			e.RequestTimeout, e.RequestTimeoutPos = d, c.pos[at]
		}
	}
	if w.Never == nil {
		return
	}
	e.Never, e.NeverPos, e.NeverNames, e.NeverNamesPos = nil, nil, nil, nil
	for i, s := range entries(c, path+".never", w.Never) {
		at := fmt.Sprintf("%s.never[%d]", path, i)
		name, _, derr := validate.Domain(s)
		if derr == nil {
			e.NeverNames = append(e.NeverNames, name)
			e.NeverNamesPos = append(e.NeverNamesPos, c.pos[at])
			continue
		}
		p, err := validate.CIDR(s)
		if err != nil && nameLike.MatchString(s) {
			err = derr
		}
		if err != nil {
			c.fail(at, err)
			continue
		}
		e.Never = append(e.Never, p)
		e.NeverPos = append(e.NeverPos, c.pos[at])
	}
}

// RefusedGrant says why p may not be granted: it overlaps one of
// agentbox's special ranges (firewall.SpecialRanges, always refused), an
// entry of elevation.never, or an IPv6 form of an IPv4 entry (NAT64, 6to4).
// It returns nil when p may be granted.
func RefusedGrant(cfg *Config, p netip.Prefix) error {
	for _, s := range firewall.SpecialRanges() {
		if s.Prefix.Overlaps(p) {
			return fmt.Errorf("%s overlaps %s (%s), which agentbox never grants", p, s.Prefix, s.Why)
		}
	}
	for i, n := range cfg.ElevationNever {
		at := cfg.ElevationNeverPos[i]
		if n.Overlaps(p) {
			return fmt.Errorf("%s overlaps %s, which elevation.never forbids (%s:%d:%d)", p, n, ConfigFile, at.Line, at.Col)
		}
		// The IPv6 forms that a translator or relay delivers to it,
		// which the firewall refuses too.
		for _, f := range firewall.NeverForms(n) {
			if f.Prefix.Overlaps(p) {
				return fmt.Errorf("%s overlaps %s (%s), which elevation.never forbids (%s:%d:%d)", p, f.Prefix, f.Why, ConfigFile, at.Line, at.Col)
			}
		}
	}
	return nil
}

// nameLike matches an entry meant as a name rather than a CIDR: a letter
// that is not a hexadecimal digit, an underscore or a '*'.
var nameLike = regexp.MustCompile(`[g-zG-Z_*]`)

// RefusedName says why name (checked, lower case, without "*.") may not be
// granted: a grant covers the name and the names below it, so it is
// refused when it covers an entry of elevation.never or lies below one.
func RefusedName(cfg *Config, name string) error {
	for i, n := range cfg.ElevationNeverNames {
		if Covers(n, name) || Covers(name, n) {
			at := cfg.ElevationNeverNamesPos[i]
			return fmt.Errorf("%s overlaps %s, which elevation.never forbids (%s:%d:%d)", name, n, ConfigFile, at.Line, at.Col)
		}
	}
	return nil
}

// Covers reports whether name is domain or a name below it.
func Covers(domain, name string) bool {
	return name == domain || strings.HasSuffix(name, "."+domain)
}

// GrantName checks a name that agentbox allow grants, written as in
// network.domains (example.com or *.example.com: either way the name and the
// names below it), and returns it lower-cased without "*." or a trailing dot.
func GrantName(s string) (string, error) {
	name, _, err := validate.Domain(s)
	return name, err
}
