package firewall

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
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

// family is one address family of the inet table.
type family struct {
	suffix string // set name suffix: "v4", "v6"
	typ    string // nftables set type
	match  string // nftables payload expression for the destination
}

// has reports whether c is of family f.
func (f family) has(c CIDR) bool { return c.Prefix.Addr().Is4() == (f.suffix == "v4") }

var (
	v4 = family{"v4", "ipv4_addr", "ip daddr"}
	v6 = family{"v6", "ipv6_addr", "ip6 daddr"}
)

// writer appends one line, formatted, to a file being rendered.
type writer func(format string, args ...any)

// ruleset is the policy grouped the way rules.nft uses it: by port.
type ruleset struct {
	domainsByPort map[uint16][]Domain
	cidrsByPort   map[uint16][]CIDR
	domainPorts   []uint16 // sorted
	cidrPorts     []uint16 // sorted
}

func newRuleset(p Policy) ruleset {
	r := ruleset{domainsByPort: map[uint16][]Domain{}, cidrsByPort: map[uint16][]CIDR{}}
	for _, d := range p.Domains {
		for _, port := range d.Ports {
			r.domainsByPort[port] = append(r.domainsByPort[port], d)
		}
	}
	for _, c := range p.CIDRs {
		for _, port := range c.Ports {
			r.cidrsByPort[port] = append(r.cidrsByPort[port], c)
		}
	}
	r.domainPorts = sortedKeys(r.domainsByPort)
	r.cidrPorts = sortedKeys(r.cidrsByPort)
	return r
}

// renderRules renders rules.nft for a normalized policy.
func renderRules(p Policy) []byte {
	r := newRuleset(p)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	writeRulesHeader(w)
	w("table inet agentbox {")
	writeCounters(w)
	writeUpstreamSets(w)
	r.writeAllowSets(w)
	r.writeCIDRSets(w)
	writeSpecialSets(w)
	writeZones(w)
	writeRedirect(w)
	writeRefuse(w)
	r.writeOutput(w)
	writeInput(w)
	w("}")
	return []byte(b.String())
}

func writeRulesHeader(w writer) {
	w("# %s", header)
	w("#")
	w("# The agentbox egress firewall: one nftables table for IPv4 and IPv6.")
	w("# %s loads it, with the addresses of the upstream", EntrypointPath)
	w("# resolvers, in one `nft -f` transaction before anything else runs.")
	w("#")
	w("# Output is allowed only")
	w("#   - to the filter resolver, dnsmasq on 127.0.0.1:53: every DNS query,")
	w("#     to whatever resolver, is redirected there;")
	w("#   - from dnsmasq (uid %d, %s) to the upstream resolvers;", DNSUID, DNSUser)
	w("#   - on loopback, except to Docker's embedded DNS (127.0.0.11);")
	w("#   - over TCP to the CIDRs listed below, on their ports;")
	w("#   - over TCP to the addresses of the names listed below, on their ports:")
	w("#     dnsmasq adds an address to the name's sets when it answers a query")
	w("#     for the name (nftset= in dnsmasq.conf);")
	w("#   - for IPv6 neighbor discovery on the local link.")
	w("# Everything else is rejected at once and counted:")
	w("#   nft list counters table inet agentbox")
	w("")
	w("# Create the table if it is missing, then delete it: loading this file")
	w("# replaces any previous copy in the same transaction.")
	w("table inet agentbox")
	w("delete table inet agentbox")
	w("")
}

// counters are the named counters of rejected packets, in the order the
// entrypoint prints them.
var counters = []struct{ name, comment string }{
	{"rejected_dns", "DNS from other uids than dnsmasq not sent to the filter resolver"},
	{"rejected_docker_dns", "other uids than dnsmasq to Docker's embedded DNS (127.0.0.11)"},
	{"rejected_special", "private and special-purpose addresses not listed as CIDRs"},
	{"rejected_other", "everything else not allowed"},
	{"rejected_spoof", "other uids than dnsmasq posing as an upstream resolver: from its address, or from port 53"},
	{"rejected_routing", "IPv6 packets with a routing header, whose destination is only the first hop"},
}

func writeCounters(w writer) {
	for _, c := range counters {
		w("\tcounter %s {", c.name)
		w("\t\tcomment %q", c.comment)
		w("\t}")
		w("")
	}
}

func writeUpstreamSets(w writer) {
	w("\t# The upstream resolvers (nameserver lines of /etc/resolv.conf), added by")
	w("\t# %s at start. Only dnsmasq may reach them.", EntrypointPath)
	for _, f := range []family{v4, v6} {
		w("\tset upstream_%s {", f.suffix)
		w("\t\ttype %s", f.typ)
		w("\t}")
		w("")
	}
}

func (r ruleset) writeAllowSets(w writer) {
	for _, port := range r.domainPorts {
		ds := r.domainsByPort[port]
		w("\t# TCP port %d to these names and every name below them; dnsmasq adds", port)
		w("\t# their addresses when it answers a query:")
		width := 0
		for _, d := range ds {
			width = max(width, len(d.Name))
		}
		for _, d := range ds {
			w("\t#   %s", column(d.Name, width, "  ", d.Sources))
		}
		for _, f := range []family{v4, v6} {
			w("\tset allow_%s_%d {", f.suffix, port)
			w("\t\ttype %s", f.typ)
			w("\t}")
			w("")
		}
	}
}

func (r ruleset) writeCIDRSets(w writer) {
	for _, port := range r.cidrPorts {
		for _, f := range []family{v4, v6} {
			var elems []string
			width := 0
			for _, c := range r.cidrsByPort[port] {
				if f.has(c) {
					width = max(width, len(c.Prefix.String())+1)
				}
			}
			for _, c := range r.cidrsByPort[port] {
				if f.has(c) {
					elems = append(elems, column(c.Prefix.String()+",", width, "  # ", c.Sources))
				}
			}
			if len(elems) == 0 {
				continue // no set for a family without CIDRs
			}
			w("\t# TCP port %d to these CIDRs, even in private ranges.", port)
			writeIntervalSet(w, fmt.Sprintf("cidr_%s_%d", f.suffix, port), f.typ, true, elems)
		}
	}
}

func writeSpecialSets(w writer) {
	w("\t# Private and special-purpose ranges: rejected unless listed as CIDRs")
	w("\t# above, even when an allowed name resolves into them.")
	for _, f := range []family{v4, v6} {
		list := specialV4
		if f == v6 {
			list = specialV6
		}
		width := 0
		for _, s := range list {
			width = max(width, len(s.prefix)+1)
		}
		elems := make([]string, 0, len(list))
		for _, s := range list {
			elems = append(elems, column(s.prefix+",", width, "  # ", []string{s.why}))
		}
		writeIntervalSet(w, "special_"+f.suffix, f.typ, false, elems)
	}
}

// dnsZone is the conntrack zone of the flows between dnsmasq and the
// upstream resolvers.
const dnsZone = 1

// writeZones writes the chains that track dnsmasq's flows to the upstream
// resolvers in a conntrack zone of their own.
func writeZones(w writer) {
	w("\t# dnsmasq's queries to the upstream resolvers, and their answers, are")
	w("\t# tracked in conntrack zone %d, which no packet of another uid enters: a", dnsZone)
	w("\t# flow that another uid starts can never match one of dnsmasq's")
	w("\t# queries, whatever its addresses and ports. Root's flows to a remote")
	w("\t# upstream (which the redirect leaves alone) share the zone, and so do")
	w("\t# the answers of a resolver on loopback: Docker's, which runs as root.")
	w("\t# Priority raw runs before conntrack.")
	w("\tchain zone_out {")
	w("\t\ttype filter hook output priority raw; policy accept;")
	w("\t\tmeta skuid %d ip daddr @upstream_v4 ct zone set %d", DNSUID, dnsZone)
	w("\t\tmeta skuid %d ip6 daddr @upstream_v6 ct zone set %d", DNSUID, dnsZone)
	w("\t\tmeta skuid 0 ip daddr != 127.0.0.0/8 ip daddr @upstream_v4 ct zone set %d", dnsZone)
	w("\t\tmeta skuid 0 ip6 daddr != ::1 ip6 daddr @upstream_v6 ct zone set %d", dnsZone)
	w("\t\tmeta skuid 0 ip saddr @upstream_v4 ct zone set %d", dnsZone)
	w("\t\tmeta skuid 0 ip6 saddr @upstream_v6 ct zone set %d", dnsZone)
	w("\t}")
	w("")
	w("\t# Answers from remote upstream resolvers. (A packet on loopback keeps")
	w("\t# the zone it got on its way out.)")
	w("\tchain zone_in {")
	w("\t\ttype filter hook prerouting priority raw; policy accept;")
	w("\t\tiif != \"lo\" ip saddr @upstream_v4 ct zone set %d", dnsZone)
	w("\t\tiif != \"lo\" ip6 saddr @upstream_v6 ct zone set %d", dnsZone)
	w("\t}")
	w("")
}

func writeRedirect(w writer) {
	w("\t# Every DNS query goes to the filter resolver, whatever server it names.")
	w("\t# Priority -110 runs before Docker's nat rules for its embedded DNS")
	w("\t# (iptables, priority -100).")
	w("\tchain dns_redirect {")
	w("\t\ttype nat hook output priority -110; policy accept;")
	w("\t\tmeta skuid %d return comment \"dnsmasq (%s) asks the upstream resolvers\"", DNSUID, DNSUser)
	w("\t\tmeta skuid 0 ip daddr != 127.0.0.0/8 return comment \"Docker's embedded resolver forwards as root\"")
	w("\t\tmeta skuid 0 ip6 daddr != ::1 return comment \"Docker's embedded resolver forwards as root\"")
	w("\t\tudp dport 53 redirect to :53")
	w("\t\ttcp dport 53 redirect to :53")
	w("\t}")
	w("")
}

func writeRefuse(w writer) {
	w("\t# Rejects at once, so that a blocked connection fails fast. TCP gets a")
	w("\t# reset: after an ICMP error a blocking connect() fails only when the SYN")
	w("\t# is resent, a second later.")
	w("\tchain refuse {")
	w("\t\tmeta l4proto tcp reject with tcp reset")
	w("\t\treject with icmpx admin-prohibited")
	w("\t}")
	w("")
}

func (r ruleset) writeOutput(w writer) {
	w("\tchain output {")
	w("\t\ttype filter hook output priority filter; policy drop;")
	w("")
	writeDNSGuard(w)
	w("")
	w("\t\t# No IPv6 routing header (segment routing, or any type), which any")
	w("\t\t# socket may set: the rules below judge a packet by its destination,")
	w("\t\t# which is then only the first hop of its route. Dropped: a reset or")
	w("\t\t# an error would come from the first hop, which the socket ignores.")
	w("\t\texthdr rt exists counter name \"rejected_routing\" drop")
	w("")
	w("\t\tct state established,related accept")
	w("\t\tct state invalid drop")
	w("")
	w("\t\t# IPv6 neighbor discovery on the local link (hop limit 255), without")
	w("\t\t# which no IPv6 address can be reached, and the kernel's multicast")
	w("\t\t# listener reports (hop limit 1). IPv4's ARP is not filtered here.")
	w("\t\ticmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } ip6 hoplimit 255 accept")
	w("\t\ticmpv6 type { mld-listener-report, mld2-listener-report } ip6 hoplimit 1 accept")
	w("")
	w("\t\t# The filter resolver, matched by destination address: after the")
	w("\t\t# redirect above the output interface is not \"lo\".")
	w("\t\tip daddr 127.0.0.1 udp dport 53 accept")
	w("\t\tip daddr 127.0.0.1 tcp dport 53 accept")
	w("")
	w("\t\t# dnsmasq alone to the upstream resolvers, on any port: Docker")
	w("\t\t# translates 127.0.0.11:53 to a random port before this hook.")
	w("\t\tmeta skuid %d ip daddr @upstream_v4 meta l4proto { tcp, udp } accept", DNSUID)
	w("\t\tmeta skuid %d ip6 daddr @upstream_v6 meta l4proto { tcp, udp } accept", DNSUID)
	w("")
	w("\t\t# Loopback: the agent's own local servers.")
	w("\t\toif \"lo\" accept")
	r.writeAllowRules(w)
	w("")
	w("\t\tcounter name \"rejected_other\" goto refuse")
	w("\t}")
	w("")
}

// writeDNSGuard writes the rules that keep other uids away from dnsmasq's
// flows to the upstream resolvers; they come before "established".
func writeDNSGuard(w writer) {
	w("\t\t# DNS, before \"established\": conntrack cannot tell two sockets with")
	w("\t\t# the same addresses and ports apart, so a packet that reuses the ports")
	w("\t\t# of one of dnsmasq's queries would pass as dnsmasq's own. Other uids")
	w("\t\t# send DNS only to the filter resolver (the redirect below sends it")
	w("\t\t# there), never from dnsmasq's source ports, and nothing at all to the")
	w("\t\t# upstream resolvers or Docker's embedded DNS. Root is exempt: in this")
	w("\t\t# namespace it is the entrypoint and Docker's embedded resolver, which")
	w("\t\t# forwards dnsmasq's queries to the host's resolvers from in here; the")
	w("\t\t# agent is never root (uid 0 refused, no capabilities, no_new_privs).")
	w("\t\tmeta skuid != { 0, %d } meta l4proto { tcp, udp } th dport 53 th sport %d-%d counter name \"rejected_dns\" goto refuse", DNSUID, DNSMinPort, DNSMaxPort)
	w("\t\tmeta skuid != { 0, %d } meta l4proto { tcp, udp } th dport 53 ip daddr != 127.0.0.1 counter name \"rejected_dns\" goto refuse", DNSUID)
	w("\t\tmeta skuid != { 0, %d } meta l4proto { tcp, udp } th dport 53 meta nfproto ipv6 counter name \"rejected_dns\" goto refuse", DNSUID)
	w("\t\tmeta skuid != { 0, %d } ip daddr @upstream_v4 counter name \"rejected_dns\" goto refuse", DNSUID)
	w("\t\tmeta skuid != { 0, %d } ip6 daddr @upstream_v6 counter name \"rejected_dns\" goto refuse", DNSUID)
	w("\t\tmeta skuid != { 0, %d } ip daddr 127.0.0.11 counter name \"rejected_docker_dns\" goto refuse", DNSUID)
	w("\t\t# Nor may other uids pose as the upstream's side of dnsmasq's queries.")
	w("\t\t# A packet from UPSTREAM:53 to dnsmasq's address and source port")
	w("\t\t# starts a flow whose reply direction is dnsmasq's next query from that")
	w("\t\t# port: the query would match it, skip Docker's DNAT and reach the")
	w("\t\t# sender's socket, whose answer dnsmasq would take. So nothing, in any")
	w("\t\t# protocol, from an upstream's address or Docker's DNS, and no TCP or")
	w("\t\t# UDP from port 53 (a DNS server of theirs gets no queries: the")
	w("\t\t# redirect sends every query to the filter resolver).")
	w("\t\tmeta skuid != { 0, %d } ip saddr @upstream_v4 counter name \"rejected_spoof\" goto refuse", DNSUID)
	w("\t\tmeta skuid != { 0, %d } ip6 saddr @upstream_v6 counter name \"rejected_spoof\" goto refuse", DNSUID)
	w("\t\tmeta skuid != { 0, %d } ip saddr 127.0.0.11 counter name \"rejected_spoof\" goto refuse", DNSUID)
	w("\t\tmeta skuid != { 0, %d } meta l4proto { tcp, udp } th sport 53 counter name \"rejected_spoof\" goto refuse", DNSUID)
	w("\t\tmeta skuid 0 meta l4proto { tcp, udp } th dport 53 accept")
}

// writeAllowRules writes the accept rules of the policy and the reject of
// the special ranges between them.
func (r ruleset) writeAllowRules(w writer) {
	if len(r.cidrPorts) > 0 {
		w("")
		w("\t\t# CIDRs listed in the policy, before the special ranges.")
		for _, port := range r.cidrPorts {
			for _, f := range []family{v4, v6} {
				if slices.ContainsFunc(r.cidrsByPort[port], f.has) {
					w("\t\t%s @cidr_%s_%d tcp dport %d accept", f.match, f.suffix, port, port)
				}
			}
		}
	}
	w("")
	w("\t\tip daddr @special_v4 counter name \"rejected_special\" goto refuse")
	w("\t\tip6 daddr @special_v6 counter name \"rejected_special\" goto refuse")
	if len(r.domainPorts) > 0 {
		w("")
		w("\t\t# Addresses of allowed names, by port.")
		for _, port := range r.domainPorts {
			for _, f := range []family{v4, v6} {
				w("\t\t%s @allow_%s_%d tcp dport %d accept", f.match, f.suffix, port, port)
			}
		}
	}
}

func writeInput(w writer) {
	w("\t# Nothing comes in except answers, loopback and IPv6 neighbor discovery.")
	w("\tchain input {")
	w("\t\ttype filter hook input priority filter; policy drop;")
	w("\t\tct state established,related accept")
	w("\t\ticmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-advert } ip6 hoplimit 255 accept")
	w("\t\tiif \"lo\" accept")
	w("\t}")
}

// writeIntervalSet writes a named interval set with one element per line.
func writeIntervalSet(w writer, name, typ string, merge bool, elems []string) {
	w("\tset %s {", name)
	w("\t\ttype %s", typ)
	w("\t\tflags interval")
	if merge {
		w("\t\tauto-merge")
	}
	w("\t\telements = {")
	for _, e := range elems {
		w("\t\t\t%s", e)
	}
	w("\t\t}")
	w("\t}")
	w("")
}

// column pads item to width and appends sep and the sources, if any.
func column(item string, width int, sep string, sources []string) string {
	if len(sources) == 0 {
		return item
	}
	return fmt.Sprintf("%-*s%s%s", width, item, sep, strings.Join(sources, ", "))
}

// sortedKeys returns the ports of m in increasing order.
func sortedKeys[V any](m map[uint16]V) []uint16 {
	keys := make([]uint16, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
