package firewall

import (
	"fmt"
	"net/netip"
	"slices"
)

// special is an address range that no process in the sandbox may reach
// unless the policy lists it as a CIDR.
type special struct {
	prefix string
	why    string
}

// specialV4 and specialV6 are the private and special-purpose ranges. They
// leave out 198.18.0.0/15 and 2001:db8::/32, which tests use as "public".
//
// specialV6 also holds every IPv4 range of specialV4 as IPv6 addresses that
// embed it, which a NAT64 translator (RFC 6052) or a 6to4 relay (RFC 3056)
// would deliver to that IPv4 address; NAT64 of a public address stays
// allowed. IPv4-compatible addresses (::/96, deprecated by RFC 4291), which a
// tunnel may carry to their IPv4 address, are refused whole.
var (
	specialV4 = []special{
		{"0.0.0.0/8", `"this" network`},
		{"10.0.0.0/8", "private (RFC 1918)"},
		{"100.64.0.0/10", "shared address space, carrier-grade NAT (RFC 6598)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local, includes cloud metadata at 169.254.169.254"},
		{"172.16.0.0/12", "private (RFC 1918)"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.168.0.0/16", "private (RFC 1918)"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved, includes broadcast"},
	}
	specialV6 = slices.Concat(
		[]special{
			{"::/96", "unspecified, loopback and IPv4-compatible (deprecated, RFC 4291)"},
			{"::ffff:0:0/96", "IPv4-mapped"},
		},
		embedded("64:ff9b::/96", "NAT64 (RFC 6052)"),
		[]special{
			{"64:ff9b:1::/48", "local-use IPv4/IPv6 translation (RFC 8215)"},
			{"100::/64", "discard-only (RFC 6666)"},
		},
		embedded("2002::/16", "6to4 (RFC 3056)"),
		[]special{
			{"fc00::/7", "unique local"},
			{"fe80::/10", "link-local"},
			{"ff00::/8", "multicast"},
		},
	)
)

// embedded returns the ranges of specialV4 embedded in the IPv6 prefix
// base, which must end on a byte boundary with room for 32 bits after it.
func embedded(base, how string) []special {
	b := netip.MustParsePrefix(base)
	out := make([]special, 0, len(specialV4))
	for _, s := range specialV4 {
		p := netip.MustParsePrefix(s.prefix)
		a := b.Addr().As16()
		v4 := p.Addr().As4()
		copy(a[b.Bits()/8:], v4[:])
		out = append(out, special{
			prefix: netip.PrefixFrom(netip.AddrFrom16(a), b.Bits()+p.Bits()).String(),
			why:    fmt.Sprintf("%s in %s", s.prefix, how),
		})
	}
	return out
}

// specialSets returns the special ranges as two sets, v4 and v6, each
// range with its reason.
func specialSets() []intervalSet {
	var out []intervalSet
	for _, f := range []family{v4, v6} {
		list := specialV4
		if f == v6 {
			list = specialV6
		}
		var elems, notes []string
		for _, s := range list {
			elems = append(elems, s.prefix+",")
			notes = append(notes, s.why)
		}
		out = append(out, intervalSet{nftSet: f.set("special_" + f.suffix), Elems: align(elems, notes)})
	}
	return out
}

// SpecialRange is one of the ranges of the special_v4 and special_v6 sets,
// with the reason it is refused.
type SpecialRange struct {
	Prefix netip.Prefix
	Why    string
}

// SpecialRanges returns the ranges of the special_v4 and special_v6 sets,
// IPv4 first, in the order of the rules: what no grant of agentbox allow may
// reach.
func SpecialRanges() []SpecialRange {
	out := make([]SpecialRange, 0, len(specialV4)+len(specialV6))
	for _, s := range slices.Concat(specialV4, specialV6) {
		out = append(out, SpecialRange{netip.MustParsePrefix(s.prefix), s.why})
	}
	return out
}
