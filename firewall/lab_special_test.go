package firewall_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// specialSample is an address inside p away from its edges: the second
// bit after the prefix set (so fd00::/8, which dnsmasq drops, is not
// fc00::/7's sample), and the low bits 5.
func specialSample(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	if bit := p.Bits() + 1; bit < len(b)*8 {
		b[bit/8] |= 0x80 >> (bit % 8)
	}
	b[len(b)-1] |= 5
	a, _ := netip.AddrFromSlice(b)
	return a
}

// tableName is the name that the upstream answers with the sample of
// special range i.
func tableName(i int) string { return fmt.Sprintf("s%d.table.private.test", i) }

// tableRecords are the upstream's answers for tableName: one per special
// range.
func tableRecords() []netlab.Record {
	var out []netlab.Record
	for i, s := range firewall.SpecialRanges() {
		typ := "AAAA"
		if s.Prefix.Addr().Is4() {
			typ = "A"
		}
		out = append(out, netlab.Record{Name: tableName(i), Type: typ, Values: []string{specialSample(s.Prefix).String()}, TTL: 60})
	}
	return out
}

// TestLabSpecialTable walks the one table of special ranges
// (firewall.SpecialRanges) under mode open: for each, a name that resolves
// into it
// gets the answer dnsmasq gives as the table says (dropped by its
// rebinding protection, or passed on), and the firewall refuses its
// address whichever, wherever the address answers without the firewall.
// The documentation ranges, which dnsmasq dropped and the firewall let
// through, and Teredo are refused by address too.
func TestLabSpecialTable(t *testing.T) {
	l := newModeLab(t, openPolicy) // every public address: the table alone refuses
	table := firewall.SpecialRanges()
	extra := []string{"203.0.113.5", "198.51.100.5", "192.0.2.5", "2001:db8::5", "2001:0:4136:e378:8000:63bf:f5ff:fefa"}
	var samples []string
	for _, s := range table {
		samples = append(samples, specialSample(s.Prefix).String())
	}
	for _, a := range append(samples, extra...) {
		cmd := "addr add " + a + "/32 dev lo"
		if strings.Contains(a, ":") {
			cmd = "addr add " + a + "/128 dev lo nodad"
		}
		// Some cannot be a host's address (multicast, ...): then nothing
		// answers there, and the control below leaves it out.
		_, _ = l.lab.Exec(l.net, append([]string{"ip"}, strings.Fields(cmd)...)...)
	}
	reachable := map[string]bool{}
	for _, a := range append(samples, extra...) {
		if r := l.do(dial(a, 443)); r.OK {
			reachable[a] = true
		}
	}
	for _, a := range extra {
		if !reachable[a] {
			t.Fatalf("%s does not answer without the firewall", a)
		}
	}
	t.Logf("without the firewall, %d of the %d ranges' samples answer", len(reachable)-len(extra), len(table))

	l.startReady()
	for i, s := range table {
		sample := samples[i]
		t.Run(s.Prefix.String(), func(t *testing.T) {
			l := l.on(t)
			typ := "AAAA"
			if s.Prefix.Addr().Is4() {
				typ = "A"
			}
			r := l.do(dnsReq(agentResolver, "udp", tableName(i), typ))
			want := answer("NOERROR", sample)
			if s.Rebind {
				want = rebind(tableName(i))
			}
			if err := want(l, r); err != nil {
				t.Errorf("%s %s (into %s, %s; rebind %v): %v", typ, tableName(i), s.Prefix, s.Why, s.Rebind, err)
			}
			if reachable[sample] {
				l.refuses(sample, 443)
			}
		})
	}
	t.Run("DocumentationAndTeredo", func(t *testing.T) {
		l := l.on(t)
		for _, a := range extra {
			l.refuses(a, 443)
		}
	})
}
