package config

// agentbox policy add and remove: an entry of a profile's allowlist
// written into agentbox.yaml, or taken out, as text (internal/yamledit),
// so that the file keeps its comments, order and style.

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/validate"
	"github.com/agentbox-dev/agentbox/internal/yamledit"
)

// PolicyEntry is an entry of network.domains (Name) or network.cidrs
// (Prefix, when Name is "").
type PolicyEntry struct {
	Name     string // lower case, without "*." or a trailing dot
	Wildcard bool
	Prefix   netip.Prefix
	Ports    []uint16 // nil: the list's default ports
}

// ParsePolicyEntry reads NAME (example.com, *.example.com) or a CIDR (an
// address is a /32 or /128) for agentbox policy, with ports (nil for the
// default ones).
func ParsePolicyEntry(s string, ports []uint16) (PolicyEntry, error) {
	e := PolicyEntry{Ports: ports}
	if p, err := netip.ParsePrefix(s); err == nil {
		if p.Masked() != p {
			return e, fmt.Errorf("invalid CIDR %q: host bits are set; did you mean %s?", s, p.Masked())
		}
		e.Prefix = p
		return e, nil
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		e.Prefix = netip.PrefixFrom(a, a.BitLen())
		return e, nil
	}
	name, wildcard, err := validate.Domain(s)
	if err != nil {
		return e, err
	}
	e.Name, e.Wildcard = name, wildcard
	return e, nil
}

// String is the entry as agentbox.yaml writes it.
func (e PolicyEntry) String() string {
	switch {
	case e.Name == "":
		return e.Prefix.String()
	case e.Wildcard:
		return "*." + e.Name
	}
	return e.Name
}

func (e PolicyEntry) list() string {
	if e.Name == "" {
		return "cidrs"
	}
	return "domains"
}

// PolicySection is the path of the network section that profile's
// allowlist is written in: network, or profiles.NAME.network for a
// profile with its own. A profile without an allowlist has none.
func PolicySection(cfg *Config, profile string) ([]string, error) {
	p, ok := cfg.Profile(profile)
	if !ok {
		return nil, ProfileError(cfg, profile)
	}
	switch {
	case p.From == ProfileOpen:
		return nil, fmt.Errorf("profile %s admits every public destination already: it has no allowlist to change", profile)
	case p.Custom:
		return []string{"profiles", profile, "network"}, nil
	case p.Mode == firewall.ModeAllowlist:
		return []string{"network"}, nil
	}
	return nil, fmt.Errorf("profile %s has no network (give a profile from locked its own: profiles.NAME.network)", profile)
}

// PolicyUses reports whether profile running (the sandbox's) takes its
// allowlist from section: an edit there changes what it may reach.
func PolicyUses(cfg *Config, running string, section []string) bool {
	s, err := PolicySection(cfg, running)
	return err == nil && slices.Equal(s, section)
}

// PolicyPorts are the ports e allows under profile: its own, else its
// list's defaults.
func PolicyPorts(cfg *Config, profile string, e PolicyEntry) []uint16 {
	if e.Ports != nil {
		return e.Ports
	}
	if p, ok := cfg.Profile(profile); ok && len(p.Network.Ports) > 0 {
		return p.Network.Ports
	}
	return DefaultPorts
}

// PolicyRefused says why agentbox policy add does not add e under cfg's
// profile: a name that elevation.never covers (top-level or the
// profile's), or a range of agentbox's always-refused ones or of
// elevation.never.
func PolicyRefused(cfg *Config, profile string, e PolicyEntry) error {
	cfgs := []*Config{cfg}
	if p, ok := cfg.Profile(profile); ok {
		c := *cfg
		c.ElevationNever, c.ElevationNeverPos = p.Elevate.Never, p.Elevate.NeverPos
		c.ElevationNeverNames, c.ElevationNeverNamesPos = p.Elevate.NeverNames, p.Elevate.NeverNamesPos
		cfgs = append(cfgs, &c)
	}
	for _, c := range cfgs {
		var err error
		if e.Name != "" {
			err = RefusedName(c, e.Name)
		} else {
			err = RefusedGrant(c, e.Prefix)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ErrPolicyUnchanged says that an entry is in the list already, with the
// same ports.
var ErrPolicyUnchanged = errors.New("in the list already")

// AddPolicy returns data (agentbox.yaml) with e added to the list of
// section. An entry of the same name (or range) with the same ports is
// ErrPolicyUnchanged; with other ports, an error at its place.
func AddPolicy(data []byte, section []string, e PolicyEntry) ([]byte, error) {
	path := append(slices.Clip(section), e.list())
	items, err := yamledit.List(data, path)
	if err != nil {
		return nil, positioned(err)
	}
	for _, it := range items {
		if !sameEntry(it.Value, e) {
			continue
		}
		have := []uint16(nil)
		for _, p := range it.Ports {
			have = append(have, uint16(p))
		}
		if slices.Equal(have, e.Ports) {
			return nil, ErrPolicyUnchanged
		}
		return nil, fmt.Errorf("%s:%d:%d: %s: %s is there already, with ports %v; edit it there", ConfigFile, it.Line, it.Col,
			strings.Join(path, "."), e, portsOrDefault(have))
	}
	entry := yamledit.Entry{Key: "host", Value: e.String()}
	if e.Name == "" {
		entry.Key = "cidr"
	}
	for _, p := range e.Ports {
		entry.Ports = append(entry.Ports, int(p))
	}
	out, err := yamledit.Append(data, path, entry)
	return out, positioned(err)
}

// RemovePolicy returns data without e's entry in the list of section, and
// the entry as it was written (its ports).
func RemovePolicy(data []byte, section []string, e PolicyEntry) ([]byte, PolicyEntry, error) {
	path := append(slices.Clip(section), e.list())
	items, err := yamledit.List(data, path)
	if err != nil {
		return nil, e, positioned(err)
	}
	for i, it := range items {
		if !sameEntry(it.Value, e) {
			continue
		}
		e.Ports = nil
		for _, p := range it.Ports {
			e.Ports = append(e.Ports, uint16(p))
		}
		out, err := yamledit.Remove(data, path, i)
		return out, e, positioned(err)
	}
	return nil, e, fmt.Errorf("%s is not in %s (agentbox policy removes only what the list names)", e, strings.Join(path, "."))
}

// sameEntry tells whether the list's value v is entry e.
func sameEntry(v string, e PolicyEntry) bool {
	o, err := ParsePolicyEntry(v, nil)
	if err != nil {
		return false
	}
	return o.Name == e.Name && o.Wildcard == e.Wildcard && o.Prefix == e.Prefix
}

func portsOrDefault(p []uint16) any {
	if p == nil {
		return "(the default)"
	}
	return p
}

// positioned names agentbox.yaml in a yamledit error's place.
func positioned(err error) error {
	var e *yamledit.Error
	if errors.As(err, &e) {
		return fmt.Errorf("%s:%d:%d: %s", ConfigFile, e.Line, e.Col, e.Msg)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", ConfigFile, err)
	}
	return nil
}
