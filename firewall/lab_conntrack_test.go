package firewall_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// TestLabConntrack covers two bypasses the lab found in an earlier firewall,
// both from one cause: dnsmasq's queries to the upstream and the agent's DNS
// packets share connection tracking, and conntrack cannot tell two sockets
// with the same addresses and ports apart. A UDP packet that matches an
// existing entry takes that entry's NAT (or none) and would pass "ct state
// established,related accept". The firewall now rejects DNS of other uids
// that is not for the filter resolver before that rule, and dnsmasq queries
// from ports (firewall.DNSMinPort-DNSMaxPort) outside the kernel's
// ephemeral range, from which the agent's DNS is refused.
func TestLabConntrack(t *testing.T) {
	t.Run("DNSFromDnsmasqPort", testDNSFromDnsmasqPort)
	t.Run("ForwardLoops", testForwardLoops)
}

// testDNSFromDnsmasqPort: the agent sends DNS from the source port of one of
// dnsmasq's queries to the upstream. The packet matches dnsmasq's conntrack
// entry, so it is not redirected; had it passed as established, the agent would
// ask the upstream directly, any name, any type (under Docker: 127.0.0.1:PORT
// to 127.0.0.11:53). It must be refused before it leaves.
func testDNSFromDnsmasqPort(t *testing.T) {
	l := newLab(t)
	l.startReady()
	mark := l.eventCount()
	l.resolve("port.wild.test", "A") // dnsmasq asks the upstream
	var port int
	for _, e := range l.events(mark) {
		if e.Kind == "dns" && e.Name == "port.wild.test" {
			port, _ = strconv.Atoi(e.Remote[strings.LastIndex(e.Remote, ":")+1:])
		}
	}
	if port == 0 {
		t.Fatal("the upstream saw no query for port.wild.test")
	}
	if port < firewall.DNSMinPort || port > firewall.DNSMaxPort {
		t.Errorf("dnsmasq queried from port %d, outside %d-%d", port, firewall.DNSMinPort, firewall.DNSMaxPort)
	}
	mark = l.eventCount()
	r := l.do(fromPort(netlab.Request{Op: "dns", Addr: upstream + ":53", Name: "secret.exfil.test", Type: "A"}, port))
	if r.OK || r.Errno != "EPERM" {
		t.Errorf("a lookup of an unlisted name from dnsmasq's port %d: %+v, want EPERM", port, r)
	}
	for _, e := range l.events(mark) {
		t.Errorf("the upstream saw %+v", e)
	}
}

// testForwardLoops: were dnsmasq to send a query from a source port that one of
// the agent's lookups used in the last 30 s, the query would match the agent's
// entry, whose NAT is the redirect to 127.0.0.1:53, and come back to dnsmasq as
// a client query. dnsmasq forwards it again, from the same port: the query
// loops inside dnsmasq, thousands of times a second, each time two lines in the
// log, and the name gets no answer. It takes the agent asking the address that
// dnsmasq forwards to, which is what happens under Docker, where both use
// 127.0.0.11 (here the agent asks the upstream's address). With N lookups in
// the last 30 s, each forwarded lookup loops with a chance of about N in 28232
// (the ephemeral ports).
func testForwardLoops(t *testing.T) {
	l := newLab(t)
	l.startReady()
	l.resolve("allowed.test", "A")
	// 3000 lookups of a cached name, each from a new port: 3000 entries.
	if r := l.do(netlab.Request{Op: "dnsbench", Addr: upstream + ":53", Name: "allowed.test", Type: "A", Count: 3000, NewSocket: true, Timeout: time.Second}); !r.OK {
		t.Fatalf("cached lookups: %v", r)
	}
	// 300 forwarded lookups: about 30 would loop.
	r := l.do(netlab.Request{Op: "dnsbench", Addr: upstream + ":53", Name: "loop-%d.wild.test", Type: "A", Count: 300, NewSocket: true, Timeout: 300 * time.Millisecond})
	if r.OK {
		return
	}
	m := regexp.MustCompile(`\((loop-\d+\.wild\.test)\)`).FindStringSubmatch(r.Err)
	if m == nil {
		t.Fatalf("lookups of listed names: %v", r)
	}
	// The agent's resolver tries again, as resolvers do.
	retry := dnsReq(agentResolver, "udp", m[1], "A")
	retry.Timeout, retry.Retries = 500*time.Millisecond, 5
	again := l.do(retry)
	outcome := "an answer"
	if !again.OK {
		outcome = "no answer (" + again.Errno + ")"
	}
	received := 0
	for _, line := range l.egress.Log().Lines() {
		if strings.Contains(line.Text, "query[A] "+m[1]+" from ") {
			received++
		}
	}
	t.Errorf("%d of 300 lookups of listed names answered; %s got none, and %s in %d more tries of 0.5 s; by then dnsmasq had received a query for it %d times (and %d log lines more were not kept)",
		len(r.Samples), m[1], outcome, again.Tries, received, l.egress.Log().Dropped())
}

// TestLabDockerResolver: under Docker, dnsmasq's upstream is 127.0.0.11,
// whose resolver (dockerd's) forwards to the host's resolvers from inside
// the container's network namespace, as root. Those queries must reach the
// upstream, not be redirected back to dnsmasq (a loop: allowed names never
// resolved under Docker), while the agent's queries to the same address
// still get the filter's answer.
func TestLabDockerResolver(t *testing.T) {
	l := newLab(t)
	l.startReady()
	root, err := l.lab.StartHelper(l.sbx, "agent", 0) // attempts as root, like dockerd's resolver
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(root.Close)
	for _, network := range []string{"udp", "tcp"} {
		mark := l.eventCount()
		r, err := root.Call(dnsReq(upstream+":53", network, "secret.exfil.test", "A"))
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK || r.Rcode != "NOERROR" {
			t.Errorf("%s: root's query to the upstream: %+v, want the upstream's answer", network, r)
		}
		seen := false
		for _, e := range l.events(mark) {
			seen = seen || (e.Kind == "dns" && e.Name == "secret.exfil.test")
		}
		if !seen {
			t.Errorf("%s: the upstream never saw root's query", network)
		}
		// The agent asking the same resolver gets the filter's answer.
		if r := l.do(dnsReq(upstream+":53", network, "secret.exfil.test", "A")); r.Rcode != "NXDOMAIN" {
			t.Errorf("%s: the agent's query: %+v, want the filter's NXDOMAIN", network, r)
		}
	}
}
