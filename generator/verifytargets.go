package generator

import (
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
)

// VerifyTargets returns the probe targets of cfg's balanced profile,
// defaults applied.
func VerifyTargets(cfg *config.Config) config.Verify {
	p, ok := cfg.Profile(config.ProfileBalanced)
	if !ok { // a Config made by hand, without its profiles
		b := cfg.Builtin(config.ProfileBalanced)
		p = &b
	}
	return ProfileVerifyTargets(cfg, p)
}

// ProfileVerifyTargets returns the probe targets of profile p, defaults
// applied. Under mode none, the name that must not resolve is one the
// balanced policy allows, and nothing must connect; under open, only a
// verify.allowed that agentbox.yaml names.
func ProfileVerifyTargets(cfg *config.Config, p *config.Profile) config.Verify {
	v := cfg.Verify
	pol := profilePolicy(cfg, p)
	switch p.Mode {
	case firewall.ModeNone:
		// The name balanced connects to must not even resolve.
		if host, _, err := net.SplitHostPort(VerifyTargets(cfg).Allowed); err == nil && net.ParseIP(host) == nil {
			v.UnlistedName = host
		}
		v.Allowed = ""
	case firewall.ModeAllowlist:
		if v.Allowed == "" && len(pol.Domains) > 0 {
			d := pol.Domains[0]
			v.Allowed = d.Name + ":" + strconv.Itoa(int(d.Ports[0]))
		}
	}
	if v.UnlistedName == "" {
		for _, n := range config.DefaultUnlistedNames {
			if !slices.ContainsFunc(pol.Domains, func(d firewall.Domain) bool { return n == d.Name || strings.HasSuffix(n, "."+d.Name) }) {
				v.UnlistedName = n
				break
			}
		}
	}
	if v.UnlistedAddress == "" {
		v.UnlistedAddress = config.DefaultUnlistedAddress
	}
	if v.Resolver == "" {
		v.Resolver = config.DefaultResolver
	}
	if v.MetadataAddress == "" {
		v.MetadataAddress = config.DefaultMetadataAddress
	}
	if v.IPv6Address == "" {
		v.IPv6Address = config.DefaultIPv6Address
	}
	return v
}
