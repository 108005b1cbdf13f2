package firewall_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// localPort is where the agent's own server listens on loopback.
const localPort = 7000

// noneBattery is what mode none (the locked profile) refuses: every name
// gets NXDOMAIN, whoever is asked, and nothing but loopback is reached.
func noneBattery() []attempt {
	var random []netlab.Request
	for i := range 10 {
		random = append(random, dnsReq(agentResolver, []string{"udp", "tcp"}[i%2], fmt.Sprintf("%016x.exfil.test", rand.Uint64()), "TXT"))
	}
	nft := lookPath("nft")
	allTypes := []string{"A", "AAAA", "TXT", "MX", "ANY", "HTTPS", "SRV", "NS", "SOA", "CNAME", "PTR"}
	return []attempt{
		// DNS: NXDOMAIN for every name of every type, even those the lab's
		// allowlist lists; other resolvers are the filter.
		{name: "ListedNameEveryType", reqs: dnsTypes(agentResolver, "allowed.test", allTypes...), want: answer("NXDOMAIN")},
		{name: "ListedNames", reqs: []netlab.Request{dnsReq(agentResolver, "tcp", "deep.sub.wild.test", "A"), dnsReq(agentResolver, "udp", "v6.test", "AAAA"), dnsReq(agentResolver, "udp", "ten.private.test", "A")}, want: answer("NXDOMAIN")},
		{name: "UnlistedNameEveryType", reqs: dnsTypes(agentResolver, "other.test", allTypes...), want: answer("NXDOMAIN")},
		{name: "ReverseLookup", reqs: dnsTypes(agentResolver, "10.0.18.198.in-addr.arpa", "PTR", "PTR"), want: answer("NXDOMAIN")},
		{name: "SingleLabel", reqs: dnsTypes(agentResolver, "intranet", "A", "AAAA"), want: answer("NXDOMAIN")},
		{name: "TunnelRandomSubdomains", reqs: random, want: answer("NXDOMAIN")},
		{name: "RogueResolver", reqs: dnsTypes(rogue+":53", "allowed.test", "A", "A", "TXT"), want: answer("NXDOMAIN")},
		{name: "UpstreamDirectly", reqs: dnsTypes(upstream+":53", "other.test", "A", "A"), want: answer("NXDOMAIN")},
		{name: "ResolverWithoutServer", reqs: []netlab.Request{dnsReq("198.18.7.7:53", "udp", "other.test", "A"), dnsReq(gatewayV4+":53", "tcp", "other.test", "A")}, want: answer("NXDOMAIN")},
		{name: "UpstreamOtherPortUDP", reqs: []netlab.Request{dnsReq(upstream+":5300", "udp", "other.test", "A")}, want: refused("EPERM")},
		{name: "UpstreamOtherPortTCP", reqs: []netlab.Request{dnsReq(upstream+":5300", "tcp", "other.test", "A")}, want: refused("ECONNREFUSED")},
		{name: "IPv6ResolverUDP", reqs: []netlab.Request{dnsReq("["+rogueV6+"]:53", "udp", "allowed.test", "A")}, want: refused("EPERM")},
		{name: "IPv6ResolverTCP", reqs: []netlab.Request{dnsReq("["+rogueV6+"]:53", "tcp", "allowed.test", "A")}, want: refused("ECONNREFUSED")},
		{name: "DockerDNSPortUDP", reqs: []netlab.Request{dnsReq(dockerDNS, "udp", "other.test", "A")}, want: refused("EPERM")},
		{name: "DockerDNSPortTCP", reqs: []netlab.Request{dnsReq(dockerDNS, "tcp", "other.test", "A")}, want: refused("ECONNREFUSED")},
		{name: "FromDockerDNSAddress", reqs: []netlab.Request{{Op: "udp", Local: "127.0.0.11:40053", Addr: poseTarget}}, want: refused("EPERM")},
		// TCP anywhere but loopback.
		{name: "PublicTCP", reqs: dials([]string{allowedV4, unlistedV4, rogueV4Ans, cidrHost, upstream}, 443, 80, 22), want: refused("ECONNREFUSED")},
		{name: "PublicTCPIPv6", reqs: dials([]string{allowedV6, unlistedV6, v6Only, publicNAT64V6}, 443, 80), want: refused("ECONNREFUSED")},
		{name: "PrivateTCP", reqs: dials([]string{privateV4, metadataV4, gatewayV4, cgnatV4}, 443, 80, 22), want: refused("ECONNREFUSED")},
		{name: "PrivateTCPIPv6", reqs: dials([]string{gatewayV6, ulaV6, nat64V6, sixTo4V6, compatV6}, 443), want: refused("ECONNREFUSED")},
		{name: "DNSOverTLS", reqs: dials([]string{rogue, allowedV4}, 853), want: refused("ECONNREFUSED")},
		// Other protocols.
		{name: "UDP", reqs: []netlab.Request{{Op: "udp", Addr: addr(allowedV4, 443)}, {Op: "udp", Addr: addr(unlistedV4, 9999)}}, want: refused("EPERM")},
		{name: "UDPIPv6", reqs: []netlab.Request{{Op: "udp", Addr: addr(allowedV6, 443)}}, want: refused("EPERM")},
		{name: "ICMP", reqs: []netlab.Request{{Op: "icmp", Addr: allowedV4}, {Op: "icmp", Addr: gatewayV4}}, want: refused("EPERM")},
		{name: "ICMPv6", reqs: []netlab.Request{{Op: "icmp", Addr: allowedV6, Timeout: 300 * time.Millisecond}}, want: noReply},
		{name: "RoutingHeader", reqs: []netlab.Request{routed(4)}, want: notRouted(noReply)},
		{name: "RawSocket", reqs: []netlab.Request{{Op: "raw", Name: "inet"}, {Op: "raw", Name: "inet6"}, {Op: "raw", Name: "packet"}}, want: refused("EPERM")},
		{name: "FlushRuleset", reqs: []netlab.Request{command(nft, "flush", "ruleset")}, want: notPermitted},
	}
}

// TestLabModeNone runs the firewall of mode none (the locked profile): the
// battery, loopback, dnsmasq kept on loopback, the log, the counters, and a
// timed grant that still works and expires.
func TestLabModeNone(t *testing.T) {
	l := newModeLab(t, firewall.Policy{Mode: firewall.ModeNone})
	t.Run("WithoutFirewall", func(t *testing.T) { testOpen(t, l.on(t)) })
	local, err := l.lab.StartHelper(l.sbx, "server", agentUID)
	if err != nil {
		t.Fatal(err)
	}
	l.serve(local, &netlab.ServerConfig{TCP: []string{addr("127.0.0.1", localPort), addr("::1", localPort)}})
	p := l.startReady()

	before := l.counters()
	mark := l.eventCount()
	l.routed = l.routedPackets()
	dockerMark, err := l.docker.Call(netlab.Request{Op: "events"})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("Battery", func(t *testing.T) { runAttempts(t, l.on(t), noneBattery()) })
	t.Run("NothingReachedTheInternet", func(t *testing.T) {
		l := l.on(t)
		for _, e := range l.events(mark) {
			t.Errorf("the internet saw %+v", e)
		}
		r, err := l.docker.Call(netlab.Request{Op: "events", Since: len(dockerMark.Events)})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Events {
			t.Errorf("Docker's DNS saw %+v", e)
		}
	})
	t.Run("Counted", func(t *testing.T) {
		counted(t, l.on(t), before, "rejected_dns", "rejected_docker_dns", "rejected_special", "rejected_other", "rejected_spoof", "rejected_routing")
	})
	t.Run("Logged", func(t *testing.T) {
		for _, want := range []string{"query[A] allowed.test from ", "query[MX] allowed.test from ", "config allowed.test is NXDOMAIN", "query[TXT] other.test from "} {
			if _, _, ok := p.Log().Await(0, want, 5*time.Second); !ok {
				t.Errorf("the log lacks %q:\n%s", want, p.Output())
			}
		}
	})
	t.Run("Loopback", func(t *testing.T) {
		l := l.on(t)
		l.connects("127.0.0.1", localPort)
		l.connects("::1", localPort)
	})
	t.Run("DnsmasqStaysOnLoopback", func(t *testing.T) { testDnsmasqConfined(t, p) })
	t.Run("Healthy", func(t *testing.T) { l.on(t).healthy(p) })
	t.Run("Grant", func(t *testing.T) { testNoneGrant(t, l.on(t), p) })
}

// testDnsmasqConfined checks that dnsmasq's uid reaches neither the
// upstream nor Docker's DNS, which root, as a control, reaches.
func testDnsmasqConfined(t *testing.T, p *netlab.Proc) {
	for _, script := range []string{
		"exec 3<>/dev/tcp/" + upstream + "/53",
		"echo query >/dev/udp/" + upstream + "/53",
		"exec 3<>/dev/tcp/" + strings.Replace(dockerDNS, ":", "/", 1),
		"echo query >/dev/udp/" + strings.Replace(dockerDNS, ":", "/", 1),
	} {
		if code, out := bashAs(t, p, 0, script); code != 0 {
			t.Errorf("as root, %s: exit %d, want 0 (the control): %s", script, code, out)
		}
		if code, out := bashAs(t, p, firewall.DNSUID, script); code == 0 {
			t.Errorf("as dnsmasq's uid, %s succeeded: %s", script, out)
		}
	}
}

// testNoneGrant: a timed grant opens one address and port in mode none,
// names still get NXDOMAIN, and the kernel takes the grant back.
func testNoneGrant(t *testing.T, l *lab, p *netlab.Proc) {
	l.refuses(unlistedV4, 443)
	start := time.Now()
	if out, code := entrypoint(t, p, "grant", unlistedV4+"/32", "443", "2"); code != 0 || !strings.Contains(out, "granted") {
		t.Fatalf("grant: exit %d: %s", code, out)
	}
	l.connects(unlistedV4, 443)
	if r := l.do(netlab.Request{Op: "open", ID: "granted", Addr: addr(unlistedV4, 443)}); !r.OK {
		t.Fatalf("opening a connection during the grant: %v", r)
	}
	l.refuses(unlistedV4, 80)
	l.refuses(privateV4, 443)
	if r := l.do(dnsReq(agentResolver, "udp", "other.test", "A")); r.Rcode != "NXDOMAIN" {
		t.Errorf("other.test during the grant: %v, want NXDOMAIN", r)
	}
	time.Sleep(time.Until(start.Add(2200 * time.Millisecond)))
	l.refuses(unlistedV4, 443)
	if r := l.do(netlab.Request{Op: "echo", ID: "granted", Line: "after", Timeout: 300 * time.Millisecond}); r.OK {
		t.Errorf("the connection opened during the grant still works after it expired: %v", r)
	}
	if out, _ := entrypoint(t, p, "grants"); out != "" {
		t.Errorf("grants after expiry: %q", out)
	}
}
