package config

import "net/netip"

// CIDRPrefixes are the CIDRs of network.cidrs (none for a nil c).
func (c *Config) CIDRPrefixes() []netip.Prefix {
	if c == nil {
		return nil
	}
	var out []netip.Prefix
	for _, r := range c.CIDRs {
		out = append(out, r.Prefix)
	}
	return out
}
