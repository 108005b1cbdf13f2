package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/validate"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// Profiles (trust tiers): every profile is generated, and one is chosen
// when a sandbox or a task starts. The built-ins are locked (no network,
// the project read-only), balanced (agentbox.yaml's policy: the default)
// and open (every public destination); profiles: derives others from them.

// The built-in profiles.
const (
	ProfileLocked   = "locked"
	ProfileBalanced = "balanced"
	ProfileOpen     = "open"
)

// BuiltinProfiles are the built-in profiles, sorted.
var BuiltinProfiles = []string{ProfileBalanced, ProfileLocked, ProfileOpen}

// DefaultProfile is the profile of agentbox up without --profile when
// agentbox.yaml names none.
const DefaultProfile = ProfileBalanced

// ProfileGrammar is the grammar of a custom profile's name.
const ProfileGrammar = `[a-z][a-z0-9-]{0,30}`

var profileName = regexp.MustCompile("^" + ProfileGrammar + "$")

// NetworkRules is the rules of a network section.
type NetworkRules struct {
	Services []string
	Domains  []DomainRule
	CIDRs    []CIDRRule
	Ports    []uint16 // default ports
}

// Profile is one trust tier, built-in or custom, defaults applied.
type Profile struct {
	Name     string
	From     string      // the built-in it derives from; Name for a built-in
	Pos      yamlpos.Pos // where profiles.NAME is written; zero for a built-in
	Locked   bool        // locked's filesystem: a fresh read-only clone, /tmp and /output writable
	Mode     firewall.Mode
	Network  NetworkRules // the allowlist (allowlist mode) or the admitted special ranges' CIDRs (open)
	Catalog  bool         // the agent's and the IDE's domains join the allowlist
	Custom   bool         // the network is the profile's own, not the top-level one
	CPUs     float64      // 0: no limit
	Memory   string
	Pids     int
	Elevate  Elevation
	Explicit bool     // written in profiles:
	ReadOnly []string // workspace.readonly of the profile, on top of the top-level one
	Hidden   []string // workspace.hidden of the profile, on top of the top-level one
}

// ReadOnlyPaths are the paths whose changes fetch refuses under p: the
// top-level ones and the profile's.
func (cfg *Config) ReadOnlyPaths(p *Profile) []string {
	if p == nil {
		return cfg.ReadOnly
	}
	return append(slices.Clip(cfg.ReadOnly), p.ReadOnly...)
}

// HiddenPatterns are the workspace.hidden patterns under p: the top-level
// ones, then the profile's.
func (cfg *Config) HiddenPatterns(p *Profile) []string {
	if p == nil {
		return cfg.Hidden
	}
	return append(slices.Clip(cfg.Hidden), p.Hidden...)
}

// Profile returns the profile called name.
func (cfg *Config) Profile(name string) (*Profile, bool) {
	for i := range cfg.Profiles {
		if cfg.Profiles[i].Name == name {
			return &cfg.Profiles[i], true
		}
	}
	return nil, false
}

// ProfileNames are the names of every profile, sorted.
func (cfg *Config) ProfileNames() []string {
	names := make([]string, len(cfg.Profiles))
	for i, p := range cfg.Profiles {
		names[i] = p.Name
	}
	return names
}

// Builtin returns built-in profile name with cfg's top-level settings.
func (cfg *Config) Builtin(name string) Profile {
	p := Profile{Name: name, From: name, CPUs: cfg.CPUs, Memory: cfg.Memory, Pids: cfg.Pids,
		Elevate: Elevation{Allowed: cfg.ElevationAllowed, AllowedPos: cfg.ElevationAllowedPos,
			Max: cfg.ElevationMax, MaxPos: cfg.ElevationMaxPos,
			RequestTimeout: cfg.ElevationRequestTimeout, RequestTimeoutPos: cfg.ElevationRequestTimeoutPos, Never: cfg.ElevationNever, NeverPos: cfg.ElevationNeverPos,
			NeverNames: cfg.ElevationNeverNames, NeverNamesPos: cfg.ElevationNeverNamesPos}}
	top := NetworkRules{Services: cfg.Services, Domains: cfg.Domains, CIDRs: cfg.CIDRs, Ports: cfg.Ports}
	switch name {
	case ProfileLocked:
		p.Locked, p.Mode = true, firewall.ModeNone
		p.Elevate.Allowed, p.Elevate.AllowedPos = false, yamlpos.Pos{}
	case ProfileBalanced:
		p.Mode, p.Network, p.Catalog = firewall.ModeAllowlist, top, true
	case ProfileOpen:
		p.Mode, p.Network = firewall.ModeOpen, NetworkRules{CIDRs: cfg.CIDRs, Ports: cfg.Ports}
	}
	return p
}

// profiles checks profile and profiles, and fills cfg.Profiles (sorted by
// name) and cfg.DefaultProfile. It runs after the top-level sections.
func (c *checker) profiles(w *wireFile, cfg *Config) {
	for _, name := range BuiltinProfiles {
		cfg.Profiles = append(cfg.Profiles, cfg.Builtin(name))
	}
	if c.within("profiles", len(w.Profiles)) {
		for _, name := range slices.Sorted(maps.Keys(w.Profiles)) {
			if p, ok := c.profile(cfg, name, w.Profiles[name]); ok {
				cfg.Profiles = append(cfg.Profiles, p)
			}
		}
	}
	slices.SortFunc(cfg.Profiles, func(a, b Profile) int { return strings.Compare(a.Name, b.Name) })
	cfg.DefaultProfile = DefaultProfile
	if w.Profile != nil {
		cfg.DefaultProfile, cfg.DefaultProfilePos = *w.Profile, c.pos["profile"]
		if _, ok := cfg.Profile(*w.Profile); !ok {
			c.failf("profile", "%s", EnumError("profile", *w.Profile, cfg.ProfileNames()))
		}
	}
}

// profile checks profiles.NAME.
func (c *checker) profile(cfg *Config, name string, w wireProfile) (Profile, bool) {
	path := yamlpos.Join("profiles", name)
	switch {
	case slices.Contains(BuiltinProfiles, name):
		c.failf(path, "profile %q is built in; give yours another name", name)
		return Profile{}, false
	case !profileName.MatchString(name):
		c.failf(path, "invalid profile name %q: want a lower-case letter, then lower-case letters, digits and -, at most 31 in all", name)
		return Profile{}, false
	case w.From == nil:
		c.failf(path, "missing from: the built-in profile it starts from (%s)", yamlpos.Quoted(BuiltinProfiles))
		return Profile{}, false
	case !slices.Contains(BuiltinProfiles, *w.From):
		c.failf(path+".from", "%s", EnumError("profile", *w.From, BuiltinProfiles))
		return Profile{}, false
	}
	p := cfg.Builtin(*w.From)
	p.Name, p.Pos, p.Explicit = name, c.pos[path], true
	if w.Network != nil {
		p.Network, p.Custom = c.networkRules(path+".network", *w.Network), true
		switch *w.From {
		case ProfileLocked:
			p.Mode = firewall.ModeAllowlist
		case ProfileOpen:
			if len(p.Network.Services)+len(p.Network.Domains) > 0 {
				c.failf(path+".network", "a profile from open admits every name already; its network may list cidrs only (the ranges open refuses that it admits after all)")
			}
		}
	}
	c.limits(path+".resources", w.Resources, &p.CPUs, &p.Memory, &p.Pids)
	for i, r := range entries(c, path+".workspace.readonly", w.Workspace.ReadOnly) {
		if err := validate.RelPath(r); err != nil {
			c.fail(fmt.Sprintf("%s.workspace.readonly[%d]", path, i), err)
		}
	}
	for i, h := range entries(c, path+".workspace.hidden", w.Workspace.Hidden) {
		if err := validate.PathPattern(strings.TrimPrefix(h, "!")); err != nil {
			c.fail(fmt.Sprintf("%s.workspace.hidden[%d]", path, i), err)
		}
	}
	p.ReadOnly, p.Hidden = w.Workspace.ReadOnly, w.Workspace.Hidden
	if w.Elevation != nil {
		c.elevationRules(path+".elevation", *w.Elevation, &p.Elevate)
	}
	return p, true
}

// ProfileError says that name is not one of cfg's profiles.
func ProfileError(cfg *Config, name string) error {
	return fmt.Errorf("%s", EnumError("profile", name, cfg.ProfileNames()))
}
