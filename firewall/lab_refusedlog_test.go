package firewall_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/denials"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// refusedDests parses the entrypoint's output (ulogd's JSON lines among
// dnsmasq's) from line from on, as agentbox blocked does.
func (l *lab) refusedDests(p *netlab.Proc, from int) []denials.Dest {
	l.t.Helper()
	var b strings.Builder
	for _, line := range p.Log().Lines()[from:] {
		b.WriteString(line.Text + "\n")
	}
	rep, err := denials.Parse(strings.NewReader(b.String()), denials.Packets(firewall.LogPrefix, firewall.LogReasons))
	if err != nil {
		l.t.Fatal(err)
	}
	return rep.Dests
}

// awaitDests waits up to 2 s for records of want destinations from line
// from on, and returns what there is then.
func (l *lab) awaitDests(p *netlab.Proc, from, want int) []denials.Dest {
	l.t.Helper()
	var got []denials.Dest
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got = l.refusedDests(p, from); len(got) >= want {
			break
		}
	}
	return got
}

// TestLabRefusedLog checks the per-packet record of refused connections: one
// record per refused attempt, with its reason, none for allowed traffic, and
// no more than the kernel's limit under a flood.
func TestLabRefusedLog(t *testing.T) {
	testenv.RequireProgram(t, "ulogd")
	l := newLab(t)
	p := l.startReady()
	if _, _, ok := p.Log().Await(0, "refused packets are logged", 5*time.Second); !ok {
		t.Fatalf("the entrypoint did not start the logger; its output:\n%s", p.Output())
	}
	t.Run("Reasons", func(t *testing.T) {
		l := l.on(t)
		cases := []struct {
			name  string
			req   netlab.Request
			addr  string
			port  uint16
			proto string
			why   string
		}{
			{"UnlistedTCP", dial(unlistedV4, 443), unlistedV4, 443, "tcp", "unlisted"},
			{"UnlistedTCPv6", dial(unlistedV6, 8443), unlistedV6, 8443, "tcp", "unlisted"},
			{"Private", dial(privateV4, 443), privateV4, 443, "tcp", "special"},
			{"UDP", netlab.Request{Op: "udp", Addr: addr(unlistedV4, 9999), Line: "\x1b]0;owned\a\n{\"oob.prefix\":\"x\"}"}, unlistedV4, 9999, "udp", "udp"},
			{"ICMP", netlab.Request{Op: "icmp", Addr: unlistedV4}, unlistedV4, 0, "icmp", "icmp"},
			// The redirect to the filter resolver comes first: the record
			// has the address it gave the packet.
			{"DNSOverIPv6", netlab.Request{Op: "dns", Addr: addr(rogueV6, 53), Net: "udp", Name: "x.test", Type: "A"}, "::1", 53, "udp", "dns"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				l := l.on(t)
				from := len(p.Log().Lines())
				if r := l.do(tc.req); r.OK {
					t.Fatalf("%s succeeded, want refused", describe(tc.req))
				}
				got := l.awaitDests(p, from, 1)
				want := netip.MustParseAddr(tc.addr)
				if len(got) != 1 || got[0].Addr != want || got[0].Port != tc.port || got[0].Proto != tc.proto || got[0].Reason != tc.why || got[0].Count != 1 {
					t.Fatalf("records %+v, want one of %s port %d %s (%s)\n%s", got, tc.addr, tc.port, tc.proto, tc.why, p.Output())
				}
			})
		}
	})
	t.Run("PayloadStaysOut", func(t *testing.T) {
		if strings.Contains(p.Output(), "owned") || strings.Contains(p.Output(), "\x1b") {
			t.Fatalf("the agent's payload reached the log:\n%q", p.Output())
		}
	})
	t.Run("AllowedNotLogged", func(t *testing.T) {
		l := l.on(t)
		time.Sleep(time.Second) // the bucket refills
		from := len(p.Log().Lines())
		if got := l.resolve("allowed.test", "A"); len(got) != 1 {
			t.Fatalf("allowed.test is %q", got)
		}
		for _, req := range []netlab.Request{dial(allowedV4, 443), dial(cidrHost, 8443), {Op: "http", URL: "http://127.0.0.1:1/"}} {
			l.do(req)
		}
		time.Sleep(200 * time.Millisecond)
		if got := l.refusedDests(p, from); len(got) != 0 {
			t.Fatalf("allowed traffic logged: %+v", got)
		}
	})
	t.Run("Flood", func(t *testing.T) {
		l := l.on(t)
		time.Sleep(time.Duration(firewall.LogBurst/firewall.LogRate+1) * time.Second) // the bucket refills
		from := len(p.Log().Lines())
		start := time.Now()
		r := l.do(netlab.Request{Op: "flood", Addr: addr(unlistedV4, 9999), Count: 100_000, Timeout: time.Minute})
		elapsed := time.Since(start)
		if r.Sent != 100_000 {
			t.Fatalf("flood: %+v", r)
		}
		time.Sleep(300 * time.Millisecond)
		got := l.refusedDests(p, from)
		limit := firewall.LogBurst + firewall.LogRate*(int(elapsed.Seconds())+2)
		if len(got) != 1 || got[0].Count > limit || got[0].Count < firewall.LogBurst {
			t.Fatalf("a flood of 100000 packets in %v gave %+v, want one destination with %d to %d records", elapsed, got, firewall.LogBurst, limit)
		}
		t.Logf("100000 refused packets in %v: %d records", elapsed, got[0].Count)
	})
}
