package firewall_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// openPolicy is mode open with one CIDR in a special range, on one port.
var openPolicy = firewall.Policy{Mode: firewall.ModeOpen, CIDRs: []firewall.CIDR{
	{Prefix: netip.MustParsePrefix(cgnatV4 + "/32"), Ports: []uint16{8443}, Sources: []string{"lab"}},
}}

// unlistedName is a name that no allowlist of the lab lists; the upstream
// gives it unlistedV4 and unlistedV6.
const unlistedName = "never.listed.example.test"

// openBattery is what mode open (the open profile) refuses: the special
// ranges, by address or by a name that resolves into them, other protocols
// than TCP, other resolvers than the filter, routing headers.
func openBattery() []attempt {
	nft := lookPath("nft")
	return []attempt{
		// Other resolvers are the filter, which asks the upstream.
		{name: "RogueResolverUDP", reqs: []netlab.Request{dnsReq(rogue+":53", "udp", "allowed.test", "A")}, want: answer("NOERROR", allowedV4)},
		{name: "RogueResolverTCP", reqs: []netlab.Request{dnsReq(rogue+":53", "tcp", "other.test", "A")}, want: answer("NOERROR", unlistedV4)},
		{name: "ResolverWithoutServer", reqs: []netlab.Request{dnsReq("198.18.7.7:53", "udp", "other.test", "A"), dnsReq(gatewayV4+":53", "tcp", "other.test", "A")}, want: answer("NOERROR", unlistedV4)},
		{name: "UpstreamOtherPortUDP", reqs: []netlab.Request{dnsReq(upstream+":5300", "udp", "other.test", "A")}, want: refused("EPERM")},
		{name: "IPv6ResolverUDP", reqs: []netlab.Request{dnsReq("["+rogueV6+"]:53", "udp", "allowed.test", "A")}, want: refused("EPERM")},
		{name: "IPv6ResolverTCP", reqs: []netlab.Request{dnsReq("["+rogueV6+"]:53", "tcp", "allowed.test", "A")}, want: refused("ECONNREFUSED")},
		{name: "DockerDNSPortUDP", reqs: []netlab.Request{dnsReq(dockerDNS, "udp", "other.test", "A")}, want: refused("EPERM")},
		{name: "DockerDNSPortTCP", reqs: []netlab.Request{dnsReq(dockerDNS, "tcp", "other.test", "A")}, want: refused("ECONNREFUSED")},
		{name: "FromDockerDNSAddress", reqs: []netlab.Request{{Op: "udp", Local: "127.0.0.11:40053", Addr: poseTarget}}, want: refused("EPERM")},
		// .invalid never leaves (the entrypoint's probe).
		{name: "Invalid", reqs: []netlab.Request{dnsReq(agentResolver, "udp", firewall.ProbeName, "A"), dnsReq(agentResolver, "tcp", "x.invalid", "TXT")}, want: answer("NXDOMAIN")},
		// Names whose answers point into special ranges: dnsmasq drops
		// some; the firewall refuses the others' addresses.
		{name: "NameIntoPrivateRange", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "ten.private.test", "A")}, want: rebind("ten.private.test")},
		{name: "NameIntoMetadata", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "meta.private.test", "A")}, want: rebind("meta.private.test")},
		{name: "NameIntoLoopback", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "lo.private.test", "A")}, want: rebind("lo.private.test")},
		{name: "NameIntoGateway", reqs: []netlab.Request{dnsReq(agentResolver, "tcp", "gw.private.test", "A")}, want: rebind("gw.private.test")},
		{name: "NameIntoUniqueLocalIPv6", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "ula.private.test", "AAAA")}, want: rebind("ula.private.test")},
		{name: "NameIntoLinkLocalIPv6", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "ll.private.test", "AAAA")}, want: rebind("ll.private.test")},
		{name: "NameIntoCGNAT", setup: []netlab.Request{dnsReq(agentResolver, "udp", "cgnat.private.test", "A")}, reqs: dials([]string{cgnatV4}, 443, 22), want: refused("ECONNREFUSED")},
		{name: "NameIntoNAT64Private", setup: []netlab.Request{dnsReq(agentResolver, "udp", "nat64.private.test", "AAAA")}, reqs: []netlab.Request{dial(nat64V6, 443)}, want: refused("ECONNREFUSED")},
		{name: "NameInto6to4Private", setup: []netlab.Request{dnsReq(agentResolver, "udp", "6to4.private.test", "AAAA")}, reqs: []netlab.Request{dial(sixTo4V6, 443)}, want: refused("ECONNREFUSED")},
		{name: "NameIntoIPv4Compatible", setup: []netlab.Request{dnsReq(agentResolver, "udp", "compat.private.test", "AAAA")}, reqs: []netlab.Request{dial(compatV6, 443)}, want: refused("ECONNREFUSED")},
		// Special ranges by address, on several ports.
		{name: "PrivateAddress", reqs: dials([]string{privateV4, gatewayV4}, 443, 80, 22), want: refused("ECONNREFUSED")},
		{name: "Metadata", reqs: dials([]string{metadataV4}, 80, 443), want: refused("ECONNREFUSED")},
		{name: "SpecialIPv6", reqs: dials([]string{gatewayV6, ulaV6, nat64V6, sixTo4V6, compatV6}, 443), want: refused("ECONNREFUSED")},
		{name: "IPv4Mapped", reqs: dials([]string{"::ffff:" + privateV4, "::ffff:" + metadataV4}, 443, 80), want: refused("ECONNREFUSED")},
		{name: "CIDROtherPort", reqs: dials([]string{cgnatV4}, 443, 8080), want: refused("ECONNREFUSED")},
		// Other protocols.
		{name: "UDP", reqs: []netlab.Request{{Op: "udp", Addr: addr(allowedV4, 443)}, {Op: "udp", Addr: addr(unlistedV4, 9999)}}, want: refused("EPERM")},
		{name: "UDPIPv6", reqs: []netlab.Request{{Op: "udp", Addr: addr(allowedV6, 443)}}, want: refused("EPERM")},
		{name: "ICMP", reqs: []netlab.Request{{Op: "icmp", Addr: allowedV4}, {Op: "icmp", Addr: gatewayV4}}, want: refused("EPERM")},
		{name: "ICMPv6", reqs: []netlab.Request{{Op: "icmp", Addr: allowedV6, Timeout: 300 * time.Millisecond}}, want: noReply},
		{name: "RoutingHeaderType0", reqs: []netlab.Request{routed(0)}, want: notRouted(refused("EINVAL"))},
		{name: "RoutingHeader", reqs: []netlab.Request{routed(4)}, want: notRouted(noReply)},
		{name: "RawSocket", reqs: []netlab.Request{{Op: "raw", Name: "inet"}, {Op: "raw", Name: "inet6"}, {Op: "raw", Name: "packet"}}, want: refused("EPERM")},
		{name: "FlushRuleset", reqs: []netlab.Request{command(nft, "flush", "ruleset")}, want: notPermitted},
	}
}

// TestLabModeOpen runs the firewall of mode open (the open profile): public
// addresses on any port, names no allowlist lists, then the battery, what
// reached the internet, the log and the counters.
func TestLabModeOpen(t *testing.T) {
	l := newModeLab(t, openPolicy)
	t.Run("WithoutFirewall", func(t *testing.T) { testOpen(t, l.on(t)) })
	p := l.startReady()
	t.Run("PublicAnyPort", func(t *testing.T) {
		l := l.on(t)
		for _, port := range []int{22, 443, 853, 8080} {
			l.connects(unlistedV4, port)
		}
		l.connects(wildV4, 22)
		l.connects(cidrHost, 8443)
		for _, port := range []int{443, 853, 8443} {
			l.connects(unlistedV6, port)
		}
		l.connects(publicNAT64V6, 443) // NAT64 of a public address
		l.connects(cgnatV4, 8443)      // the CIDR, before the special ranges
	})
	t.Run("UnlistedName", func(t *testing.T) { testOpenName(t, l.on(t)) })
	// Addresses that dnsmasq lets through (stop-dns-rebind knows no better):
	// the firewall alone refuses them (Battery/NameInto...).
	t.Run("NamesIntoSpecialRanges", func(t *testing.T) {
		l := l.on(t)
		for name, want := range map[string]string{"cgnat.private.test": cgnatV4, "nat64.private.test": nat64V6, "6to4.private.test": sixTo4V6, "compat.private.test": compatV6} {
			typ := "AAAA"
			if strings.Count(want, ".") == 3 {
				typ = "A"
			}
			if got := l.resolve(name, typ); !slices.Equal(got, []string{want}) {
				t.Errorf("%s %s is %q, want %s", typ, name, got, want)
			}
		}
	})

	before := l.counters()
	mark := l.eventCount()
	l.routed = l.routedPackets()
	t.Run("Battery", func(t *testing.T) { runAttempts(t, l.on(t), openBattery()) })
	t.Run("WhatReachedTheInternet", func(t *testing.T) { checkOpenEvents(t, l.on(t), mark) })
	t.Run("Counted", func(t *testing.T) {
		counted(t, l.on(t), before, "rejected_dns", "rejected_docker_dns", "rejected_special", "rejected_other", "rejected_spoof", "rejected_routing")
	})
	t.Run("Healthy", func(t *testing.T) { l.on(t).healthy(p) })
}

// testOpenName: a name that no allowlist lists resolves through the filter,
// which asks the upstream and logs it, and a program reaches it by name.
func testOpenName(t *testing.T, l *lab) {
	mark := l.eventCount()
	if got := l.resolve(unlistedName, "A"); !slices.Equal(got, []string{unlistedV4}) {
		t.Fatalf("%s is %q, want %s", unlistedName, got, unlistedV4)
	}
	if got := l.resolve(unlistedName, "AAAA"); !slices.Equal(got, []string{unlistedV6}) {
		t.Fatalf("AAAA %s is %q, want %s", unlistedName, got, unlistedV6)
	}
	if r := l.do(dnsReq(agentResolver, "tcp", unlistedName, "TXT")); !slices.Equal(r.Answers, []string{"upstream text"}) {
		t.Errorf("TXT %s: %v, want the upstream's text", unlistedName, r)
	}
	r := l.do(netlab.Request{Op: "http", URL: "http://" + unlistedName + "/", Resolver: agentResolver})
	if !r.OK || (r.Data != "hello http "+addr(unlistedV4, 80) && r.Data != "hello http "+addr(unlistedV6, 80)) {
		t.Errorf("GET http://%s/: %v", unlistedName, r)
	}
	asked := 0
	for _, e := range l.events(mark) {
		if e.Kind == "dns" && e.Name == unlistedName && e.Local == upstream+":53" {
			asked++
		}
	}
	if asked == 0 {
		t.Errorf("the upstream saw no query for %s", unlistedName)
	}
	for _, want := range []string{"query[A] " + unlistedName + " from ", "forwarded " + unlistedName + " to " + upstream} {
		if _, _, ok := l.egress.Log().Await(0, want, 5*time.Second); !ok {
			t.Errorf("the log lacks %q:\n%s", want, l.egress.Output())
		}
	}
}

// checkOpenEvents checks what the internet saw of the battery: DNS only from
// the filter to the upstream, never a name under .invalid, and nothing at
// an address of a special range.
func checkOpenEvents(t *testing.T, l *lab, mark int) {
	special := firewall.SpecialRanges()
	for _, e := range l.events(mark) {
		if e.Kind == "dns" {
			if e.Local != upstream+":53" || strings.HasSuffix(e.Name, ".invalid") {
				t.Errorf("the internet saw %+v", e)
			}
			continue
		}
		ap, err := netip.ParseAddrPort(e.Local)
		if err != nil {
			t.Fatalf("event %+v: %v", e, err)
		}
		for _, s := range special {
			if s.Prefix.Contains(ap.Addr().Unmap()) {
				t.Errorf("the internet saw %+v at %s (%s)", e, s.Prefix, s.Why)
			}
		}
		if e.Kind == "udp" {
			t.Errorf("the internet saw %+v", e)
		}
	}
}
