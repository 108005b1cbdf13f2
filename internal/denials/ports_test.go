package denials

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// TestPorts: a refused connection to an address the filter resolver
// answered for a name, or inside a listed CIDR, is a port the policy does
// not allow; to any other address, an unlisted address. Answers count even
// before --since; the agent's own names print escaped.
func TestPorts(t *testing.T) {
	sec := at("2026-11-22T10:00:00Z").Unix()
	log := strings.Join([]string{
		"2026-11-22T09:00:00Z dnsmasq[7]: reply api.example.com is 198.51.100.7",
		"2026-11-22T09:00:00Z dnsmasq[7]: cached API.example.com is 2001:db8::7",
		"2026-11-22T09:00:00Z dnsmasq[7]: reply cdn.example.com is <CNAME>",
		"2026-11-22T10:00:01Z " + record("unlisted", "198.51.100.7", 6, 22, sec),
		"2026-11-22T10:00:01Z " + record("unlisted", "2001:db8::7", 6, 8080, sec),
		"2026-11-22T10:00:01Z " + record("unlisted", "198.18.10.9", 6, 22, sec),
		"2026-11-22T10:00:01Z " + record("unlisted", "203.0.113.50", 6, 443, sec),
		"2026-11-22T10:00:01Z " + record("udp", "198.51.100.7", 17, 53, sec),
		"2026-11-22T10:00:01Z " + record("special", "10.1.2.3", 6, 22, sec),
		"2026-11-22T10:00:01Z " + record("special", "10.9.9.9", 6, 22, sec),
	}, "\n") + "\n"
	rep, err := Parse(strings.NewReader(log), Packets(prefix, reasons), Ports("unlisted", "special", []netip.Prefix{netip.MustParsePrefix("198.18.10.0/24"), netip.MustParsePrefix("10.1.2.0/24")}),
		Since(at("2026-11-22T10:00:00Z")))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ reason, why string }{
		"198.51.100.7:22":  {ReasonPort, "api.example.com"},
		"2001:db8::7:8080": {ReasonPort, "api.example.com"},
		"198.18.10.9:22":   {ReasonPort, "198.18.10.0/24 (network.cidrs)"},
		"203.0.113.50:443": {"unlisted", "unlisted address or port"},
		"198.51.100.7:53":  {"udp", "UDP"},
		"10.1.2.3:22":      {ReasonPort, "10.1.2.0/24 (network.cidrs)"},
		"10.9.9.9:22":      {"special", "private range"},
	}
	if len(rep.Dests) != len(want) {
		t.Fatalf("%d destinations, want %d: %+v", len(rep.Dests), len(want), rep.Dests)
	}
	for _, d := range rep.Dests {
		key := d.Addr.String() + ":" + strconv.Itoa(int(d.Port))
		w, ok := want[key]
		if !ok || d.Reason != w.reason || !strings.Contains(d.Why, w.why) {
			t.Errorf("%s: reason %q, why %q; want %q containing %q", key, d.Reason, d.Why, w.reason, w.why)
		}
	}
	// Without Ports, nothing changes.
	rep, _ = Parse(strings.NewReader(log), Packets(prefix, reasons))
	for _, d := range rep.Dests {
		if d.Reason == ReasonPort {
			t.Errorf("without Ports: %+v", d)
		}
	}
}
