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
	// rebind: dnsmasq's stop-dns-rebind drops answers anywhere in the
	// range (dnsmasq 2.90's private_net and private_net6, a fixed list).
	// Every range of that list lies in one of these, so the filter
	// resolver and the firewall never disagree: what dnsmasq drops, the
	// firewall refuses too.
	rebind bool
}

// specialV4 and specialV6 are the private and special-purpose ranges: the
// one table that the special_v4 and special_v6 sets of rules.nft, the
// checks of agentbox allow and the lab's tests all read. They leave out the
// benchmarking ranges 198.18.0.0/15 and 2001:2::/48, which the tests use as
// "public".
//
// specialV6 also holds every IPv4 range of specialV4 as IPv6 addresses that
// embed it, which a NAT64 translator (RFC 6052) or a 6to4 relay (RFC 3056)
// would deliver to that IPv4 address; NAT64 of a public address stays
// allowed. The other forms that embed an IPv4 address are refused whole:
// IPv4-compatible (::/96, deprecated by RFC 4291) and IPv4-mapped
// addresses, the local-use translation prefix, and Teredo (2001::/32, the
// client's address obfuscated in the last 32 bits).
var (
	specialV4 = []special{
		{"0.0.0.0/8", `"this" network`, true},
		{"10.0.0.0/8", "private (RFC 1918)", true},
		{"100.64.0.0/10", "shared address space, carrier-grade NAT (RFC 6598)", false},
		{"127.0.0.0/8", "loopback", true},
		{"169.254.0.0/16", "link-local, includes cloud metadata at 169.254.169.254", true},
		{"172.16.0.0/12", "private (RFC 1918)", true},
		{"192.0.0.0/24", "IETF protocol assignments", false},
		{"192.0.2.0/24", "documentation (RFC 5737)", true},
		{"192.168.0.0/16", "private (RFC 1918)", true},
		{"198.51.100.0/24", "documentation (RFC 5737)", true},
		{"203.0.113.0/24", "documentation (RFC 5737)", true},
		{"224.0.0.0/4", "multicast", false},
		{"240.0.0.0/4", "reserved, includes broadcast", false},
	}
	specialV6 = slices.Concat(
		[]special{
			{"::/96", "unspecified, loopback and IPv4-compatible (deprecated, RFC 4291)", false},
			{"::ffff:0:0/96", "IPv4-mapped", false},
		},
		embedded(nat64, "NAT64 (RFC 6052)"),
		[]special{
			{"64:ff9b:1::/48", "local-use IPv4/IPv6 translation (RFC 8215)", false},
			{"100::/64", "discard-only (RFC 6666)", false},
			{"2001::/32", "Teredo (RFC 4380): an IPv4 address, obfuscated, in the last 32 bits", false},
			{"2001:db8::/32", "documentation (RFC 3849)", true},
		},
		embedded(sixToFour, "6to4 (RFC 3056)"),
		[]special{
			{"fc00::/7", "unique local", false},
			{"fe80::/10", "link-local", true},
			{"fec0::/10", "site-local (deprecated, RFC 3879)", true},
			{"ff00::/8", "multicast", false},
		},
	)
)

// The IPv6 prefixes that carry an IPv4 address in the 32 bits after them,
// which a translator or relay delivers to that IPv4 address.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// embedded returns the ranges of specialV4 embedded in the IPv6 prefix
// base.
func embedded(base netip.Prefix, how string) []special {
	out := make([]special, 0, len(specialV4))
	for _, s := range specialV4 {
		out = append(out, special{
			prefix: embedIn(base, netip.MustParsePrefix(s.prefix)).String(),
			why:    fmt.Sprintf("%s in %s", s.prefix, how),
		})
	}
	return out
}

// embedIn returns the IPv6 range of the addresses that carry an address of
// the IPv4 range p right after base, which must end on a byte boundary
// with room for 32 bits after it.
func embedIn(base, p netip.Prefix) netip.Prefix {
	a := base.Addr().As16()
	v4 := p.Addr().As4()
	copy(a[base.Bits()/8:], v4[:])
	return netip.PrefixFrom(netip.AddrFrom16(a), base.Bits()+p.Bits())
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
	// Rebind: the filter resolver drops answers anywhere in the range
	// (dnsmasq's stop-dns-rebind); the firewall refuses the others'
	// addresses alone.
	Rebind bool
}

// SpecialRanges returns the ranges of the special_v4 and special_v6 sets,
// IPv4 first, in the order of the rules: what no grant of agentbox allow may
// reach.
func SpecialRanges() []SpecialRange {
	out := make([]SpecialRange, 0, len(specialV4)+len(specialV6))
	for _, s := range slices.Concat(specialV4, specialV6) {
		out = append(out, SpecialRange{netip.MustParsePrefix(s.prefix), s.why, s.rebind})
	}
	return out
}

// neverSets returns the sets of the ranges that no grant reaches
// (elevation.never), v4 and v6, each range with its source.
func neverSets(never []netip.Prefix) []intervalSet {
	var out []intervalSet
	for _, f := range []family{v4, v6} {
		var elems, notes []string
		for _, n := range neverRanges(never, f) {
			elems = append(elems, n.Prefix.String()+",")
			notes = append(notes, n.Why)
		}
		out = append(out, intervalSet{nftSet: f.set("never_" + f.suffix), Merge: true, Elems: align(elems, notes)})
	}
	return out
}

// NeverForms returns the IPv6 ranges that carry an address of the IPv4
// range p in a form that the firewall refuses range by range (NAT64 and
// 6to4), each with the form's name: what the never_v6 set holds for p.
func NeverForms(p netip.Prefix) []SpecialRange {
	if !p.Addr().Is4() {
		return nil
	}
	return []SpecialRange{
		{Prefix: embedIn(nat64, p), Why: p.String() + " in NAT64"},
		{Prefix: embedIn(sixToFour, p), Why: p.String() + " in 6to4"},
	}
}

// neverRanges returns the ranges of family f that no grant reaches: each
// range of never as written, and each IPv4 one also in the IPv6 forms that
// specialV6 refuses range by range (NAT64 and 6to4); the other forms that
// embed an IPv4 address are special whole.
func neverRanges(never []netip.Prefix, f family) []SpecialRange {
	var out []SpecialRange
	for _, p := range never {
		if p.Addr().Is4() == (f == v4) {
			out = append(out, SpecialRange{Prefix: p, Why: "elevation.never"})
		}
	}
	if f == v6 {
		for _, p := range never {
			out = append(out, NeverForms(p)...)
		}
	}
	return out
}
