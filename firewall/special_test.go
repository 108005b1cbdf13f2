package firewall

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// TestSpecialEmbeddedIPv4 checks that IPv6 addresses embedding a special
// IPv4 address are special too, in each form, and that NAT64 of a public
// address is not.
func TestSpecialEmbeddedIPv4(t *testing.T) {
	special := func(a string) bool {
		ip := netip.MustParseAddr(a)
		for _, s := range specialV6 {
			if netip.MustParsePrefix(s.prefix).Contains(ip) {
				return true
			}
		}
		return false
	}
	for _, a := range []string{
		"64:ff9b::10.99.0.5", "64:ff9b::169.254.169.254", "64:ff9b::127.0.0.1", "64:ff9b::192.168.1.1", "64:ff9b::100.64.0.1",
		"2002:a63:5::1", "2002:a9fe:a9fe::", "2002:c0a8:101:1::1",
		"::10.99.0.5", "::8.8.8.8", "::", "::1",
	} {
		if !special(a) {
			t.Errorf("%s is not in the special IPv6 ranges", a)
		}
	}
	for _, a := range []string{"64:ff9b::198.18.0.21", "64:ff9b::8.8.8.8", "2002:c612:15::1", "2001:2::1"} {
		if special(a) {
			t.Errorf("%s is in the special IPv6 ranges", a)
		}
	}
}

// dnsmasqRebind is what dnsmasq 2.90's stop-dns-rebind drops (private_net
// and private_net6 in its rfc1035.c, loopback and "this" network included:
// the firewall's dnsmasq.conf does not set rebind-localhost-ok), IPv4-mapped
// forms of the IPv4 ones aside.
var dnsmasqRebind = []string{
	"0.0.0.0/8", "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16",
	"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "255.255.255.255/32",
	"::/128", "::1/128", "fe80::/10", "fec0::/10", "fd00::/8", "2001:db8::/32",
}

// TestSpecialAgreesWithRebind: the one table of special ranges holds every
// range that dnsmasq's rebinding protection drops, so that a name the filter
// resolver refuses never leads to an address the firewall admits; and a
// range marked rebind lies wholly in dnsmasq's list, while the others do
// not (the lab, TestLabSpecialTable, checks dnsmasq's answers against it).
func TestSpecialAgreesWithRebind(t *testing.T) {
	table := SpecialRanges()
	within := func(p netip.Prefix, list []netip.Prefix) bool {
		for _, q := range list {
			if q.Bits() <= p.Bits() && q.Contains(p.Addr()) {
				return true
			}
		}
		return false
	}
	var rebind, special []netip.Prefix
	for _, s := range dnsmasqRebind {
		rebind = append(rebind, netip.MustParsePrefix(s))
	}
	for _, s := range table {
		special = append(special, s.Prefix)
	}
	for _, r := range rebind {
		if !within(r, special) {
			t.Errorf("dnsmasq drops answers in %s, which no special range covers", r)
		}
	}
	for _, s := range table {
		if got := within(s.Prefix, rebind); got != s.Rebind {
			t.Errorf("%s (%s): rebind %v, but dnsmasq's list covers it whole: %v", s.Prefix, s.Why, s.Rebind, got)
		}
	}
}

// TestEmbeddedForms: every IPv6 address that carries a special or never
// IPv4 address, in any form a translator, relay or tunnel delivers to it
// (IPv4-mapped, IPv4-compatible, NAT64 and local-use translation, 6to4,
// Teredo), is in the IPv6 ranges the firewall refuses; NAT64 and 6to4 of
// an address neither special nor never are not. Random addresses, fixed
// seed.
func TestEmbeddedForms(t *testing.T) {
	never := []netip.Prefix{netip.MustParsePrefix("198.19.113.0/24"), netip.MustParsePrefix("8.8.0.0/16")}
	var refused4, refused6 []netip.Prefix
	for _, s := range specialV4 {
		refused4 = append(refused4, netip.MustParsePrefix(s.prefix))
	}
	for _, s := range specialV6 {
		refused6 = append(refused6, netip.MustParsePrefix(s.prefix))
	}
	for _, n := range neverRanges(never, v4) {
		refused4 = append(refused4, n.Prefix)
	}
	for _, n := range neverRanges(never, v6) {
		refused6 = append(refused6, n.Prefix)
	}
	in := func(a netip.Addr, list []netip.Prefix) bool {
		for _, p := range list {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// forms returns v4 in each IPv6 form, with random bits where the form
	// has others (6to4's subnet and host, Teredo's server, flags and port).
	forms := func(v4 [4]byte) map[string]netip.Addr {
		var r [16]byte
		for i := range r {
			r[i] = byte(rng.UintN(256))
		}
		out := map[string]netip.Addr{}
		form := func(name string, prefix []byte, at int, addr [4]byte, rest bool) {
			a := [16]byte{}
			if rest {
				a = r
			}
			copy(a[:], prefix)
			copy(a[at:], addr[:])
			out[name] = netip.AddrFrom16(a)
		}
		form("mapped", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 12, v4, false)
		form("compatible", make([]byte, 12), 12, v4, false)
		form("NAT64", []byte{0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0}, 12, v4, false)
		form("local-use", []byte{0, 0x64, 0xff, 0x9b, 0, 1}, 6+int(rng.UintN(7)), v4, true)
		form("6to4", []byte{0x20, 0x02}, 2, v4, true)
		obfuscated := [4]byte{^v4[0], ^v4[1], ^v4[2], ^v4[3]}
		form("Teredo", []byte{0x20, 0x01, 0, 0}, 12, obfuscated, true)
		return out
	}
	random4 := func(p netip.Prefix) [4]byte {
		a := p.Addr().As4()
		x := rng.Uint32() >> p.Bits()
		if p.Bits() == 0 {
			x = rng.Uint32()
		}
		for i := range 4 {
			a[i] |= byte(x >> (24 - 8*i))
		}
		return a
	}
	for range 2000 {
		p := refused4[rng.IntN(len(refused4))]
		v4 := random4(p)
		for name, a := range forms(v4) {
			if !in(a, refused6) {
				t.Fatalf("%s in %s form (%s) is not refused over IPv6", netip.AddrFrom4(v4), name, a)
			}
		}
	}
	public := 0
	for public < 2000 {
		v4 := random4(netip.MustParsePrefix("0.0.0.0/0"))
		if in(netip.AddrFrom4(v4), refused4) {
			continue
		}
		public++
		f := forms(v4)
		for _, name := range []string{"NAT64", "6to4"} {
			if in(f[name], refused6) {
				t.Fatalf("%s, neither special nor never, is refused in %s form (%s)", netip.AddrFrom4(v4), name, f[name])
			}
		}
	}
}
