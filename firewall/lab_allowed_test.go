package firewall_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// resolve asks the agent's resolver for name and returns the answers.
func (l *lab) resolve(name, typ string) []string {
	l.t.Helper()
	r := l.do(dnsReq(agentResolver, "udp", name, typ))
	if !r.OK || r.Rcode != "NOERROR" {
		l.t.Fatalf("%s %s: %v", typ, name, r)
	}
	return r.Answers
}

// connects checks that the agent reaches the TCP server at host:port. On
// a port of the lab's names, to the address of a name, the connection
// carries that name, as a real client's does (a ClientHello's SNI, or on
// port 80 an HTTP Host), because the gateway admits nothing else there.
func (l *lab) connects(host string, port int) {
	l.t.Helper()
	name, rotate := nameOf(host)
	if name == "" || (port != 443 && port != 80) {
		r := l.do(netlab.Request{Op: "dial", Addr: addr(host, port)})
		if want := "hello " + addr(host, port); !r.OK || r.Data != want {
			l.t.Errorf("connecting to %s: %v, want the server's %q", addr(host, port), r, want)
		}
		return
	}
	want := addr(host, port)
	if rotate { // the gateway connects to the name's address of the moment
		var all []string
		for _, a := range rotating {
			all = append(all, addr(a, port))
		}
		want = strings.Join(all, "|")
	}
	l.connectsName(name, host, port, want)
}

// connectsName checks that a connection to host:port carrying name (TLS
// SNI, or on port 80 HTTP Host) reaches the server at want, or at one of
// the addresses want separates with "|".
func (l *lab) connectsName(name, host string, port int, want string) {
	l.t.Helper()
	if port == 80 {
		r := l.send(host, port, 0, 2*time.Second, "hello http", httpHead(name))
		for _, w := range strings.Split(want, "|") {
			if r.OK && strings.Contains(r.Data, "hello http "+w) {
				return
			}
		}
		l.t.Errorf("Host %s to %s: %v, want the greeting of %s", name, addr(host, port), r, want)
		return
	}
	l.reaches("SNI "+name, host, port, want, clientHello(name, false))
}

// nameOf returns the name of the lab's fake DNS whose address host is
// ("" for none, or for an address only "*" gives), and whether the name
// rotates its addresses.
func nameOf(host string) (name string, rotate bool) {
	for _, r := range upstreamRecords {
		if (r.Type != "A" && r.Type != "AAAA") || strings.HasPrefix(r.Name, "*") {
			continue
		}
		if slices.Contains(r.Values, host) {
			return r.Name, r.Rotate
		}
	}
	return "", false
}

// refuses checks that the firewall rejects a connection to host:port at once.
func (l *lab) refuses(host string, port int) {
	l.t.Helper()
	r := l.do(netlab.Request{Op: "dial", Addr: addr(host, port)})
	if err := refused(tcpRefusal(host))(l, r); err != nil {
		l.t.Errorf("connecting to %s: %v", addr(host, port), err)
	}
}

// tcpRefusal is the error of a rejected TCP connection: the firewall
// answers with a reset (ECONNREFUSED), over IPv4 and IPv6 alike.
func tcpRefusal(string) string { return "ECONNREFUSED" }

// testOpen checks that without the firewall the agent reaches the servers
// that the battery's attempts aim at: what the battery shows blocked, the
// firewall blocks.
func testOpen(t *testing.T, l *lab) {
	dnsChecks := []struct {
		req  netlab.Request
		want string
	}{
		{dnsReq(upstream+":53", "udp", "other.test", "A"), unlistedV4},
		{dnsReq(upstream+":5300", "tcp", "other.test", "A"), unlistedV4},
		{dnsReq(rogue+":53", "tcp", "allowed.test", "A"), rogueV4Ans},
		{dnsReq("["+rogueV6+"]:53", "udp", "allowed.test", "A"), rogueV4Ans},
		{dnsReq(dockerDNS, "udp", "other.test", "A"), "198.18.0.77"},
	}
	for _, c := range dnsChecks {
		if r := l.do(c.req); !slices.Equal(r.Answers, []string{c.want}) {
			t.Errorf("%s: %v, want %s", describe(c.req), r, c.want)
		}
	}
	for _, a := range []string{addr(unlistedV4, 443), addr(unlistedV6, 443), addr(privateV4, 443), addr(cgnatV4, 443),
		addr(allowedV4, 8080), addr(allowedV4, 853), addr(ulaV6, 443), addr(gatewayV6, 443), addr(outsideV4, 8443),
		addr(nat64V6, 443), addr(sixTo4V6, 443), addr(compatV6, 443)} {
		if r := l.do(netlab.Request{Op: "dial", Addr: a}); r.Data != "hello "+a {
			t.Errorf("connecting to %s: %v", a, r)
		}
	}
	// A datagram from Docker's DNS address leaves; nothing listens.
	if r := l.do(netlab.Request{Op: "udp", Local: "127.0.0.11:40053", Addr: poseTarget}); r.Errno != "ECONNREFUSED" {
		t.Errorf("UDP from 127.0.0.11:40053 to %s: %v, want ECONNREFUSED (sent, and nothing listens)", poseTarget, r)
	}
	// Through an allowed host to an unlisted one with a segment routing header.
	if r := l.do(routed(4)); r.Data != "hello "+addr(routedV6, 443) {
		t.Errorf("connecting to %s through %s: %v", routedV6, allowedV6, r)
	}
	for _, host := range []string{gatewayV4, metadataV4} {
		if r := l.do(netlab.Request{Op: "http", URL: "http://" + host + "/"}); r.Data != "hello http "+host+":80" {
			t.Errorf("GET http://%s/: %v", host, r)
		}
	}
	for _, req := range []netlab.Request{
		{Op: "udp", Addr: addr(allowedV4, 443)},
		{Op: "udp", Addr: addr(allowedV6, 443)},
		{Op: "icmp", Addr: allowedV4},
		{Op: "icmp", Addr: allowedV6},
	} {
		if r := l.do(req); !r.OK {
			t.Errorf("%s: %v", describe(req), r)
		}
	}
}

// testAllowed checks that what the lab's policy lists gets out: names,
// their subdomains and rotating addresses, CIDRs, and IPv6.
func testAllowed(t *testing.T, l *lab) {
	testAllowedIPv4(t, l)
	testAllowedIPv6(t, l)
}

func testAllowedIPv4(t *testing.T, l *lab) {
	t.Run("ListedDomain", func(t *testing.T) {
		l := l.on(t)
		if got := l.resolve("allowed.test", "A"); !slices.Equal(got, []string{allowedV4}) {
			t.Fatalf("allowed.test is %q, want %s", got, allowedV4)
		}
		l.connects(allowedV4, 443)
		// Port 80 too, by name, as a program does it (Go's resolver and
		// net/http, the resolver being Docker's address).
		r := l.do(netlab.Request{Op: "http", URL: "http://allowed.test/", Resolver: agentResolver})
		if !r.OK || (r.Data != "hello http "+addr(allowedV4, 80) && r.Data != "hello http "+addr(allowedV6, 80)) {
			t.Errorf("GET http://allowed.test/: %v", r)
		}
		l.refuses(allowedV4, 8080) // and no other port
	})
	t.Run("WildcardSubdomain", func(t *testing.T) {
		l := l.on(t)
		l.refuses(wildV4, 443) // not before a lookup
		if got := l.resolve("deep.sub.wild.test", "A"); !slices.Equal(got, []string{wildV4}) {
			t.Fatalf("deep.sub.wild.test is %q, want %s", got, wildV4)
		}
		l.connects(wildV4, 443)
	})
	t.Run("CIDR", func(t *testing.T) {
		l := l.on(t)
		l.connects(cidrHost, 8443)
		l.connects(cidrHost2, 8443) // any address of 198.19.0.0/24, no lookup
	})
	t.Run("RotatingAddress", func(t *testing.T) {
		l := l.on(t)
		never := rotating[len(rotating)-1] // not handed out by three lookups
		l.refuses(never, 443)
		seen := map[string]bool{}
		for i := range 3 {
			got := l.resolve("rotate.test", "A")
			if len(got) != 1 || seen[got[0]] {
				t.Fatalf("lookup %d of rotate.test: %q, want a new address each time (seen %v)", i+1, got, seen)
			}
			seen[got[0]] = true
			l.connects(got[0], 443)
		}
		for a := range seen { // earlier addresses keep working
			l.connects(a, 443)
		}
		// (never is not refused now: each connection above went through
		// the gateway, whose own lookups of rotate.test took more addresses.)
		var asked int
		for _, e := range l.events(0) {
			if e.Kind == "dns" && e.Name == "rotate.test" {
				asked++
			}
		}
		if asked < 3 {
			t.Errorf("the upstream saw %d queries for rotate.test, want one per lookup (3)", asked)
		}
	})
}

func testAllowedIPv6(t *testing.T, l *lab) {
	t.Run("PublicNAT64", func(t *testing.T) {
		l := l.on(t)
		// NAT64 of a public IPv4 address (198.18.0.21) stays allowed.
		if got := l.resolve("nat64.wild.test", "AAAA"); !slices.Equal(got, []string{publicNAT64V6}) {
			t.Fatalf("nat64.wild.test is %q, want %s", got, publicNAT64V6)
		}
		l.connects(publicNAT64V6, 443)
	})
	t.Run("IPv6", func(t *testing.T) {
		l := l.on(t)
		l.refuses(v6Only, 443)
		if got := l.resolve("v6.test", "AAAA"); !slices.Equal(got, []string{v6Only}) {
			t.Fatalf("v6.test is %q, want %s", got, v6Only)
		}
		l.connects(v6Only, 443)
		if got := l.resolve("allowed.test", "AAAA"); !slices.Equal(got, []string{allowedV6}) {
			t.Fatalf("AAAA allowed.test is %q, want %s", got, allowedV6)
		}
		l.connects(allowedV6, 443)
		l.connects(allowedV6, 80)
	})
}
