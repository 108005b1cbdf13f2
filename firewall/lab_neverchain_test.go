package firewall_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
)

// TestLabNeverChain: a granted name whose answer leads below a name of
// elevation.never (never.test) by a CNAME, a chain of CNAMEs or a DNAME is
// refused (REFUSED) from the first answer on, over UDP and TCP, and its
// addresses stay unreachable, over IPv4 and IPv6: the firewall does not
// wait for the keeper to learn them. x.never.test has addresses of its own,
// which the keeper never asks for. Without the firewall they connect. Other
// granted names resolve through the never filter, large answers over TCP
// too; the filter runs as the DNS user without capabilities, and the agent
// cannot ask it (nor the grant resolver) directly.
func TestLabNeverChain(t *testing.T) {
	l := newLab(t)
	t.Run("WithoutFirewall", func(t *testing.T) {
		l := l.on(t)
		l.connects(neverBelow, 443)
		l.connects(neverBelowV6, 443)
	})
	p := l.startReady()
	// The keeper starts the filter at its first look, just after ready.
	if _, ok := eventually(3*time.Second, func() bool {
		_, code, _ := p.Enter("test", "-s", "/run/agentbox/never-dns.pid")
		return code == 0
	}); !ok {
		t.Fatalf("the never filter did not start; the egress's output:\n%s", p.Output())
	}
	for _, c := range []struct{ grant, ask string }{
		{"cdn.test", "cdn.test"},       // cdn.test CNAME x.never.test
		{"chain.test", "chain.test"},   // chain.test CNAME hop.test CNAME x.never.test
		{"dname.test", "x.dname.test"}, // dname.test DNAME never.test
	} {
		t.Run(c.ask, func(t *testing.T) {
			l := l.on(t)
			if out, code := egressCmd(t, p, "grant-name", c.grant, "443", "60"); code != 0 {
				t.Fatalf("grant-name %s: exit %d: %s", c.grant, code, out)
			}
			for _, typ := range []struct{ typ, addr string }{{"A", neverBelow}, {"AAAA", neverBelowV6}} {
				for _, network := range []string{"udp", "tcp"} {
					if r := l.do(dnsReq(agentResolver, network, c.ask, typ.typ)); r.Rcode != "REFUSED" || len(r.Answers) != 0 {
						t.Errorf("%s %s over %s during the grant of %s: %v, want REFUSED", typ.typ, c.ask, network, c.grant, r)
					}
				}
				l.refuses(typ.addr, 443)
			}
		})
	}
	t.Run("OtherGrantsResolve", func(t *testing.T) {
		l := l.on(t)
		// bigalias.test CNAME big.wild.test: 100 addresses, over TCP only
		// (the grant resolver asks the filter over TCP too).
		for _, name := range []string{"granted.test", "bigalias.test"} {
			if out, code := egressCmd(t, p, "grant-name", name, "443", "60"); code != 0 {
				t.Fatalf("grant-name %s: exit %d: %s", name, code, out)
			}
		}
		if got := l.resolve("granted.test", "A"); !slices.Equal(got, []string{unlistedV4}) {
			t.Errorf("granted.test during its grant: %q", got)
		}
		l.connectsName("granted.test", unlistedV4, 443, addr(unlistedV4, 443))
		if udp := l.do(dnsReq(agentResolver, "udp", "bigalias.test", "A")); !udp.OK || !udp.TC {
			t.Errorf("bigalias.test over UDP: %v, want a truncated answer", udp)
		}
		tcp := l.do(dnsReq(agentResolver, "tcp", "bigalias.test", "A"))
		if !tcp.OK || tcp.Rcode != "NOERROR" || len(tcp.Answers) != len(bigAnswer)+1 {
			t.Errorf("bigalias.test over TCP: %s %s, %d answers, want the CNAME and %d addresses", tcp.Rcode, tcp.Err, len(tcp.Answers), len(bigAnswer))
		}
	})
	t.Run("FilterProcess", func(t *testing.T) {
		pid := pidIn(t, p, "/run/agentbox/never-dns.pid")
		out, code, err := p.Enter("sh", "-c", "cat /proc/"+strconv.Itoa(pid)+"/status")
		if err != nil || code != 0 {
			t.Fatalf("reading the never filter's status: %v %d %s", err, code, out)
		}
		id := strconv.Itoa(firewall.DNSUID)
		for _, want := range []string{"Uid:\t" + strings.Repeat(id+"\t", 3) + id, "Gid:\t" + strings.Repeat(id+"\t", 3) + id,
			"Groups:\t" + id, "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "Name:\tagentbox-never-"} {
			if !strings.Contains(out, want+"\n") && !strings.Contains(out, want+" \n") {
				t.Errorf("the never filter's status lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("NotForTheAgent", func(t *testing.T) {
		l := l.on(t)
		filter := addr("127.0.0.1", firewall.NeverDNSPort)
		for _, port := range []int{firewall.GrantDNSPort, firewall.GrantDNSPort + 1, firewall.NeverDNSPort} {
			for network, errno := range map[string]string{"udp": "EPERM", "tcp": "ECONNREFUSED"} {
				before := l.counters()
				req := dnsReq(addr("127.0.0.1", port), network, "granted.test", "A")
				if err := refused(errno)(l, l.do(req)); err != nil {
					t.Errorf("%s: %v", describe(req), err)
				}
				counted(t, l, before, "rejected_dns")
			}
		}
		// The filter is there, and answers the grant resolver's uid.
		dns, err := l.lab.StartHelper(l.sbx, "agent", firewall.DNSUID)
		if err != nil {
			t.Fatal(err)
		}
		for _, network := range []string{"udp", "tcp"} {
			r, err := dns.Call(dnsReq(filter, network, "granted.test", "A"))
			if err != nil || !r.OK || !slices.Equal(r.Answers, []string{unlistedV4}) {
				t.Errorf("uid %d asking the never filter for granted.test over %s: %v %v", firewall.DNSUID, network, r, err)
			}
			r, err = dns.Call(dnsReq(filter, network, "cdn.test", "A"))
			if err != nil || r.Rcode != "REFUSED" {
				t.Errorf("uid %d asking the never filter for cdn.test over %s: %v %v, want REFUSED", firewall.DNSUID, network, r, err)
			}
		}
	})
	l.healthy(p)
}
