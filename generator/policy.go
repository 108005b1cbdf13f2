package generator

import (
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
)

// policy builds the egress policy. A domain admits itself and every name
// below it (dnsmasq matches whole label suffixes and cannot do otherwise),
// so "*.x" and "x" are one entry. A name below a listed one gets the union
// of both's ports, because dnsmasq applies only the most specific entry; it
// is dropped when that union adds nothing, so every name appears once.
// ProfilePolicy is the egress policy of profile p (profilePolicy).
func ProfilePolicy(cfg *config.Config, p *config.Profile) firewall.Policy {
	return profilePolicy(cfg, p)
}

func policy(cfg *config.Config) firewall.Policy {
	p, _ := cfg.Profile(config.ProfileBalanced)
	if p == nil { // a Config made by hand, without its profiles
		b := cfg.Builtin(config.ProfileBalanced)
		p = &b
	}
	return profilePolicy(cfg, p)
}

// profilePolicy builds the egress policy of profile p: its mode, the
// names and CIDRs of its network, and what no grant reaches (its
// elevation.never), which the kernel refuses too.
func profilePolicy(cfg *config.Config, p *config.Profile) firewall.Policy {
	var pol firewall.Policy
	if p.Mode != firewall.ModeNone {
		pol = allowlist(cfg, p.Network, p.Catalog)
	}
	pol.Mode = p.Mode
	// The gateway checks the name of every connection to an allowed name
	// (docs/gateway.md); HasGateway says where there is one.
	pol.Gateway = p.Mode == firewall.ModeAllowlist
	if p.Mode == firewall.ModeOpen {
		pol.Domains = nil
	}
	for _, n := range p.Elevate.Never {
		pol.Never = append(pol.Never, n.Masked())
	}
	pol.NeverNames = slices.Clone(p.Elevate.NeverNames)
	// The request endpoint, where the agent asks for a grant, wherever a
	// grant may be made.
	if p.Elevate.Allowed {
		pol.Requests = &firewall.Requests{Timeout: p.Elevate.RequestTimeout, Max: p.Elevate.Max}
	}
	return pol
}

// allowlist builds the names and CIDRs of network n; withCatalog adds the
// agent's and the IDE's domains.
func allowlist(cfg *config.Config, n config.NetworkRules, withCatalog bool) firewall.Policy {
	type entry struct {
		ports   []uint16
		sources []string
	}
	byName := map[string]*entry{}
	add := func(name string, ports []uint16, source string) {
		e := byName[name]
		if e == nil {
			e = &entry{}
			byName[name] = e
		}
		e.ports = unionPorts(e.ports, ports)
		e.sources = append(e.sources, source)
	}
	addAll := func(domains []string, source string) {
		for _, d := range domains {
			add(strings.TrimPrefix(d, "*."), catalogPorts, source)
		}
	}
	if withCatalog {
		addAll(cfg.Agent.Domains, "agent "+cfg.Agent.Name)
	}
	for _, s := range n.Services {
		svc, _ := catalog.LookupService(s)
		addAll(svc.Domains, "service "+s)
	}
	if withCatalog && cfg.IDE == "vscode" {
		svc, _ := catalog.LookupService("vscode")
		addAll(svc.Domains, "ide vscode")
	}
	for _, d := range n.Domains {
		add(d.Name, portsOr(d.Ports, n.Ports), "network.domains")
	}

	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	effective := map[string][]uint16{}
	for _, n := range names {
		ports := byName[n].ports
		for a := parent(n); a != ""; a = parent(a) {
			if e := byName[a]; e != nil {
				ports = unionPorts(ports, e.ports)
			}
		}
		effective[n] = ports
	}
	var pol firewall.Policy
	for _, n := range names {
		if a := nearestListed(n, byName); a != "" && slices.Equal(effective[a], effective[n]) {
			continue // covered by a listed ancestor with the same ports
		}
		pol.Domains = append(pol.Domains, firewall.Domain{Name: n, Ports: effective[n], Sources: sortedUnique(byName[n].sources)})
	}
	pol.CIDRs = cidrs(n)
	return pol
}

// cidrs merges the CIDR rules: per port, a prefix inside another listed
// prefix is dropped; prefixes are then grouped with their ports.
func cidrs(n config.NetworkRules) []firewall.CIDR {
	byPort := map[uint16][]netip.Prefix{}
	for _, r := range n.CIDRs {
		for _, port := range portsOr(r.Ports, n.Ports) {
			byPort[port] = append(byPort[port], r.Prefix)
		}
	}
	ports := map[netip.Prefix][]uint16{}
	for port, prefixes := range byPort {
		// Shortest prefixes first: a prefix is covered only by an earlier one.
		slices.SortFunc(prefixes, func(a, b netip.Prefix) int { return a.Bits() - b.Bits() })
		var kept []netip.Prefix
		for _, p := range prefixes {
			if !slices.ContainsFunc(kept, func(k netip.Prefix) bool { return k.Contains(p.Addr()) }) {
				kept = append(kept, p)
				ports[p] = unionPorts(ports[p], []uint16{port})
			}
		}
	}
	out := make([]firewall.CIDR, 0, len(ports))
	for p, ps := range ports {
		out = append(out, firewall.CIDR{Prefix: p, Ports: ps, Sources: []string{"network.cidrs"}})
	}
	slices.SortFunc(out, func(a, b firewall.CIDR) int { return firewall.ComparePrefix(a.Prefix, b.Prefix) })
	return out
}

func portsOr(ports, def []uint16) []uint16 {
	if ports == nil {
		return def
	}
	return ports
}

func unionPorts(a, b []uint16) []uint16 {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// parent returns the name one label up, or "" at the last two labels (a
// single label is never a listed domain).
func parent(name string) string {
	_, rest, ok := strings.Cut(name, ".")
	if !ok || !strings.Contains(rest, ".") {
		return ""
	}
	return rest
}

func nearestListed[T any](name string, listed map[string]T) string {
	for a := parent(name); a != ""; a = parent(a) {
		if _, ok := listed[a]; ok {
			return a
		}
	}
	return ""
}
