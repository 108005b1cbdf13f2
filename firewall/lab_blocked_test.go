package firewall_test

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

func lookPath(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return "/usr/sbin/" + name
}

// battery is the list of bypass attempts, each with the reason it fails.
func battery() []attempt {
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + ".exfil.test"
	var random []netlab.Request
	for i := range 20 {
		network := []string{"udp", "tcp"}[i%2]
		random = append(random, dnsReq(agentResolver, network, fmt.Sprintf("%016x.exfil.test", rand.Uint64()), "A"))
	}
	// The agent's PATH may lack /usr/sbin; it may run any program.
	nft, ip := lookPath("nft"), lookPath("ip")
	return []attempt{
		// DNS: every name not listed is NXDOMAIN, whoever is asked.
		{name: "UnlistedName", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "other.test", "A"), dnsReq(agentResolver, "tcp", "other.test", "AAAA")}, want: answer("NXDOMAIN")},
		{name: "RogueResolverUDP", reqs: []netlab.Request{dnsReq(rogue+":53", "udp", "allowed.test", "A")}, want: answer("NOERROR", allowedV4)},
		{name: "RogueResolverTCP", reqs: []netlab.Request{dnsReq(rogue+":53", "tcp", "allowed.test", "A")}, want: answer("NOERROR", allowedV4)},
		{name: "RogueResolverUnlistedName", reqs: []netlab.Request{dnsReq(rogue+":53", "udp", "other.test", "A"), dnsReq(rogue+":53", "tcp", "other.test", "A")}, want: answer("NXDOMAIN")},
		{name: "ResolverWithoutServer", reqs: []netlab.Request{dnsReq("198.18.7.7:53", "udp", "other.test", "A"), dnsReq(gatewayV4+":53", "tcp", "other.test", "A")}, want: answer("NXDOMAIN")},
		// From a port that dnsmasq has not used (TestLabKnownBugs/DNSFromDnsmasqPort).
		{name: "UpstreamDirectly", reqs: []netlab.Request{fromPort(dnsReq(upstream+":53", "udp", "other.test", "A"), 20053), dnsReq(upstream+":53", "tcp", "other.test", "A")}, want: answer("NXDOMAIN")},
		{name: "UpstreamOtherPortUDP", reqs: []netlab.Request{dnsReq(upstream+":5300", "udp", "other.test", "A")}, want: refused("EPERM")},
		{name: "UpstreamOtherPortTCP", reqs: []netlab.Request{dnsReq(upstream+":5300", "tcp", "other.test", "A")}, want: refused("ECONNREFUSED")},
		{name: "IPv6ResolverUDP", reqs: []netlab.Request{dnsReq("["+rogueV6+"]:53", "udp", "allowed.test", "A")}, want: refused("EPERM")},
		{name: "IPv6ResolverTCP", reqs: []netlab.Request{dnsReq("["+rogueV6+"]:53", "tcp", "allowed.test", "A")}, want: refused("ECONNREFUSED")},
		{name: "DockerDNSPortUDP", reqs: []netlab.Request{dnsReq(dockerDNS, "udp", "other.test", "A")}, want: refused("EPERM")},
		{name: "DockerDNSPortTCP", reqs: []netlab.Request{dnsReq(dockerDNS, "tcp", "other.test", "A")}, want: refused("ECONNREFUSED")},
		// Posing as the upstream's side of dnsmasq's queries (TestLabUpstreamSpoof).
		{name: "FromDockerDNSAddress", reqs: []netlab.Request{{Op: "udp", Local: "127.0.0.11:40053", Addr: poseTarget}}, want: refused("EPERM")},
		{name: "DNSOverTLS", reqs: []netlab.Request{dial(rogue, 853), dial(allowedV4, 853)}, want: refused("ECONNREFUSED")},
		{name: "DNSOverTLSIPv6", reqs: []netlab.Request{dial(allowedV6, 853)}, want: refused("ECONNREFUSED")},
		{name: "TunnelTXT", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "6578706f7274.tunnel.test", "TXT"), dnsReq(agentResolver, "tcp", "73656372657473.tunnel.test", "TXT")}, want: answer("NXDOMAIN")},
		{name: "TunnelLongLabels", reqs: []netlab.Request{dnsReq(agentResolver, "udp", long, "A"), dnsReq(agentResolver, "tcp", long, "TXT")}, want: answer("NXDOMAIN")},
		{name: "TunnelRandomSubdomains", reqs: random, want: answer("NXDOMAIN")},
		// Listed names whose answers point into private ranges.
		{name: "NameIntoPrivateRange", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "ten.private.test", "A")}, want: rebind("ten.private.test")},
		{name: "NameIntoMetadata", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "meta.private.test", "A")}, want: rebind("meta.private.test")},
		{name: "NameIntoLoopback", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "lo.private.test", "A")}, want: rebind("lo.private.test")},
		{name: "NameIntoGateway", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "gw.private.test", "A")}, want: rebind("gw.private.test")},
		{name: "NameIntoUniqueLocalIPv6", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "ula.private.test", "AAAA")}, want: rebind("ula.private.test")},
		{name: "NameIntoLinkLocalIPv6", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "ll.private.test", "AAAA")}, want: rebind("ll.private.test")},
		// dnsmasq lets 100.64.0.0/10 through and adds it to the allow set;
		// the special ranges come first in the ruleset.
		{name: "NameIntoCGNAT", setup: []netlab.Request{dnsReq(agentResolver, "udp", "cgnat.private.test", "A")}, reqs: []netlab.Request{dial(cgnatV4, 443)}, want: refused("ECONNREFUSED")},
		// So does it with IPv6 addresses that embed a private IPv4 address.
		{name: "NameIntoNAT64Private", setup: []netlab.Request{dnsReq(agentResolver, "udp", "nat64.private.test", "AAAA")}, reqs: []netlab.Request{dial(nat64V6, 443)}, want: refused("ECONNREFUSED")},
		{name: "NameInto6to4Private", setup: []netlab.Request{dnsReq(agentResolver, "udp", "6to4.private.test", "AAAA")}, reqs: []netlab.Request{dial(sixTo4V6, 443)}, want: refused("ECONNREFUSED")},
		{name: "NameIntoIPv4Compatible", setup: []netlab.Request{dnsReq(agentResolver, "udp", "compat.private.test", "AAAA")}, reqs: []netlab.Request{dial(compatV6, 443)}, want: refused("ECONNREFUSED")},
		// Connections.
		{name: "PrivateAddress", reqs: []netlab.Request{dial(privateV4, 443)}, want: refused("ECONNREFUSED")},
		{name: "Metadata", reqs: []netlab.Request{dial(metadataV4, 80)}, want: refused("ECONNREFUSED")},
		{name: "Gateway", reqs: []netlab.Request{dial(gatewayV4, 80), dial(gatewayV4, 443)}, want: refused("ECONNREFUSED")},
		{name: "GatewayIPv6", reqs: []netlab.Request{dial(gatewayV6, 443)}, want: refused("ECONNREFUSED")},
		{name: "UnlistedAddress", reqs: []netlab.Request{dial(unlistedV4, 443), dial(rogueV4Ans, 443)}, want: refused("ECONNREFUSED")},
		{name: "UnlistedIPv6", reqs: []netlab.Request{dial(unlistedV6, 443), dial(rogueV6, 443)}, want: refused("ECONNREFUSED")},
		{name: "UniqueLocalIPv6", reqs: []netlab.Request{dial(ulaV6, 443)}, want: refused("ECONNREFUSED")},
		{name: "AllowedHostOtherPort", setup: []netlab.Request{dnsReq(agentResolver, "udp", "allowed.test", "A")}, reqs: []netlab.Request{dial(allowedV4, 8080), dial(allowedV4, 22), dial(allowedV4, 8443)}, want: refused("ECONNREFUSED")},
		{name: "AllowedIPv6HostOtherPort", setup: []netlab.Request{dnsReq(agentResolver, "udp", "allowed.test", "AAAA")}, reqs: []netlab.Request{dial(allowedV6, 8443)}, want: refused("ECONNREFUSED")},
		{name: "CIDROtherPort", reqs: []netlab.Request{dial(cidrHost, 443)}, want: refused("ECONNREFUSED")},
		{name: "NextToCIDR", reqs: []netlab.Request{dial(outsideV4, 8443)}, want: refused("ECONNREFUSED")},
		// Other protocols.
		{name: "UDP", reqs: []netlab.Request{{Op: "udp", Addr: addr(allowedV4, 443)}, {Op: "udp", Addr: addr(unlistedV4, 9999)}}, want: refused("EPERM")},
		{name: "UDPIPv6", reqs: []netlab.Request{{Op: "udp", Addr: addr(allowedV6, 443)}}, want: refused("EPERM")},
		{name: "ICMP", reqs: []netlab.Request{{Op: "icmp", Addr: allowedV4}, {Op: "icmp", Addr: gatewayV4}}, want: refused("EPERM")},
		// A routing header: the firewall would judge the first hop, an
		// allowed address. The kernel refuses type 0 itself (EINVAL);
		// segment routing (type 4) needs no privilege, and the firewall
		// drops it (no reset: it would come from the first hop).
		{name: "RoutingHeaderType0", reqs: []netlab.Request{routed(0)}, want: notRouted(refused("EINVAL"))},
		{name: "RoutingHeader", setup: []netlab.Request{dnsReq(agentResolver, "udp", "allowed.test", "AAAA")}, reqs: []netlab.Request{routed(4)}, want: notRouted(noReply)},
		{name: "ICMPv6", reqs: []netlab.Request{{Op: "icmp", Addr: allowedV6, Timeout: 300 * time.Millisecond}}, want: noReply},
		{name: "RawSocket", reqs: []netlab.Request{{Op: "raw", Name: "inet"}, {Op: "raw", Name: "inet6"}, {Op: "raw", Name: "packet"}}, want: refused("EPERM")},
		// The firewall itself.
		{name: "FlushRuleset", reqs: []netlab.Request{command(nft, "flush", "ruleset"), command(nft, "delete", "table", "inet", "agentbox")}, want: notPermitted},
		{name: "AddToAllowSet", reqs: []netlab.Request{command(nft, "add", "element", "inet", "agentbox", "allow_v4_443", "{ "+unlistedV4+" }")}, want: notPermitted},
		{name: "ChangeRoutes", reqs: []netlab.Request{command(ip, "link", "set", "eth0", "down"), command(ip, "route", "add", unlistedV4+"/32", "dev", "lo")}, want: notPermitted},
	}
}

// allowedZones are the names of the lab's policy.
var allowedZones = []string{"allowed.test", "private.test", "rotate.test", "v6.test", "wild.test"}

func allowedName(name string) bool {
	for _, z := range allowedZones {
		if name == z || strings.HasSuffix(name, "."+z) {
			return true
		}
	}
	return false
}

func describe(r netlab.Request) string {
	s := r.Op
	for _, f := range []string{r.Net, r.Addr, r.Type, r.Name, strings.Join(r.Argv, " ")} {
		if f != "" {
			s += " " + f
		}
	}
	return s
}

// testBlocked runs the bypass battery, then checks that nothing of it
// reached the internet, that the allow sets hold none of the addresses it
// aimed at, and that the firewall counted the rejections.
func testBlocked(t *testing.T, l *lab) {
	attempts := battery()
	if len(attempts) < 20 {
		t.Fatalf("the battery has %d attempts, want at least 20", len(attempts))
	}
	before := l.counters()
	mark := l.eventCount()
	l.routed = l.routedPackets()
	dockerMark, err := l.docker.Call(netlab.Request{Op: "events"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			l := l.on(t)
			for _, req := range a.setup {
				l.do(req)
			}
			for _, req := range a.reqs {
				if err := a.want(l, l.do(req)); err != nil {
					t.Errorf("%s: %v", describe(req), err)
				}
			}
		})
	}

	t.Run("NothingReachedTheInternet", func(t *testing.T) {
		l := l.on(t)
		// Only the filter's own queries for listed names, to the upstream.
		for _, e := range l.events(mark) {
			if e.Kind != "dns" || e.Local != upstream+":53" || !allowedName(e.Name) {
				t.Errorf("the internet saw %+v", e)
			}
		}
		r, err := l.docker.Call(netlab.Request{Op: "events", Since: len(dockerMark.Events)})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Events {
			t.Errorf("Docker's DNS saw %+v", e)
		}
	})
	t.Run("AllowSets", func(t *testing.T) { checkAllowSets(t, l.on(t)) })
	t.Run("Counted", func(t *testing.T) {
		after := l.on(t).counters()
		for _, name := range []string{"rejected_dns", "rejected_docker_dns", "rejected_special", "rejected_other", "rejected_spoof", "rejected_routing"} {
			if after[name] <= before[name] {
				t.Errorf("counter %s: %d packets before the battery, %d after; want more", name, before[name], after[name])
			}
		}
	})
}

// checkAllowSets checks that the battery's blocked lookups added none of
// their addresses to the allow sets, and that the addresses dnsmasq does not
// filter were added: else the tests that rely on them would test nothing.
func checkAllowSets(t *testing.T, l *lab) {
	for set, addrs := range map[string][]string{
		"allow_v4_443": {privateV4, metadataV4, "127.0.0.2", gatewayV4, unlistedV4, rogueV4Ans},
		"allow_v4_80":  {unlistedV4, metadataV4},
		"allow_v6_443": {ulaV6, "fe80::1", unlistedV6, "2001:2::66"},
	} {
		for _, a := range addrs {
			if l.setHas(set, a) {
				t.Errorf("%s holds %s", set, a)
			}
		}
	}
	if !l.setHas("allow_v4_443", cgnatV4) {
		t.Errorf("allow_v4_443 lacks %s: did dnsmasq start filtering 100.64.0.0/10? Then NameIntoCGNAT tests nothing", cgnatV4)
	}
	for _, a := range []string{nat64V6, sixTo4V6, compatV6} {
		if !l.setHas("allow_v6_443", a) {
			t.Errorf("allow_v6_443 lacks %s: did dnsmasq start filtering it? Then the NameInto tests of embedded IPv4 test nothing", a)
		}
	}
}

// testAudit checks that a blocked lookup and a rejected connection show in
// what `docker compose logs egress` prints (the entrypoint's stdout and
// stderr: dnsmasq's query log, the counters when it stops) and in the
// counters that `nft list counters` prints.
func testAudit(t *testing.T, l *lab) {
	log := l.egress.Log()
	mark := len(log.Lines())
	before := l.counters()

	if r := l.do(dnsReq(agentResolver, "udp", "audit.blocked.test", "A")); r.Rcode != "NXDOMAIN" {
		t.Fatalf("audit.blocked.test: %v", r)
	}
	for _, want := range []string{
		"query[A] audit.blocked.test from ", // 127.0.0.1: the redirect's source
		"config audit.blocked.test is NXDOMAIN",
	} {
		if _, _, ok := log.Await(mark, want, 5*time.Second); !ok {
			t.Errorf("the log lacks %q:\n%s", want, l.egress.Output())
		}
	}

	if r := l.do(dial(unlistedV4, 443)); r.Errno != "ECONNREFUSED" {
		t.Fatalf("connecting to %s: %v", unlistedV4, r)
	}
	listing := l.nft("list", "counters", "table", "inet", "agentbox")
	if !strings.Contains(listing, "counter rejected_other {") || !strings.Contains(listing, `comment "everything else not allowed"`) {
		t.Errorf("nft list counters prints:\n%s", listing)
	}
	after := l.counters()
	if after["rejected_other"] != before["rejected_other"]+1 {
		t.Errorf("rejected_other went from %d to %d packets, want one more", before["rejected_other"], after["rejected_other"])
	}

	// When the firewall stops, it prints the counters.
	if code := l.egress.Stop(5 * time.Second); code != 0 {
		t.Errorf("the entrypoint exited with %d on SIGTERM, want 0", code)
	}
	m := regexp.MustCompile(`agentbox-egress: rejected packets: dns=(\d+) docker_dns=(\d+) special=(\d+) other=(\d+)`).FindStringSubmatch(l.egress.Output())
	if m == nil {
		t.Fatalf("no counters in the log:\n%s", l.egress.Output())
	}
	if other, _ := strconv.Atoi(m[4]); other < after["rejected_other"] {
		t.Errorf("the log says other=%s, nft said %d", m[4], after["rejected_other"])
	}
}

// TestLabMixedAnswer pins down what happens to an answer of an allowed name
// that holds a public and a private address (a DNS rebinding attempt):
// dnsmasq refuses the answer, the private address stays unreachable, and
// the public address, which dnsmasq added to the allow set before it met the
// private one, stays there. That is accepted: the address is one that the
// allowed name's own servers gave, as they could have given it alone, and
// the allow sets promise no more than that. Through the gateway, a
// connection carrying the name goes nowhere: the gateway's own lookup of it
// is refused too.
func TestLabMixedAnswer(t *testing.T) {
	l := newLab(t)
	l.startReady()
	r := l.do(dnsReq(agentResolver, "udp", "mixed.private.test", "A"))
	t.Logf("A mixed.private.test: %v", r)
	if err := rebind("mixed.private.test")(l, r); err != nil {
		t.Errorf("A mixed.private.test: %v", err)
	}
	if l.setHas("allow_v4_443", privateV4) {
		t.Errorf("allow_v4_443 holds %s", privateV4)
	}
	l.refuses(privateV4, 443)
	if !l.setHas("allow_v4_443", mixedV4) {
		t.Errorf("allow_v4_443 lacks %s: dnsmasq no longer adds the public address of a refused answer; docs/security.md says it does", mixedV4)
	}
	l.stopped("SNI mixed.private.test", mixedV4, 443, clientHello("mixed.private.test", false))
}
