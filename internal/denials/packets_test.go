package denials

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// reasons and prefix stand for the firewall's (firewall.LogReasons,
// firewall.LogPrefix), which cmd/agentbox passes.
var reasons = map[string]string{"unlisted": "unlisted address or port", "special": "private range", "udp": "UDP", "icmp": "ICMP"}

const prefix = "agentbox-refused:"

// record is a line as ulogd2's JSON output writes it (fields trimmed).
func record(reason, ip string, proto, port int, sec int64) string {
	portField := ""
	if port >= 0 {
		portField = fmt.Sprintf(`, "src_port": 40000, "dest_port": %d`, port)
	}
	return fmt.Sprintf(`{"timestamp": "2026-11-22T10:00:00.000001", "dvc": "Netfilter", "raw.pktlen": 60, "oob.prefix": "%s%s", "oob.time.sec": %d, "oob.time.usec": 250000, "oob.uid": 1000, "ip.protocol": %d%s, "src_ip": "172.30.0.2", "dest_ip": "%s"}`,
		prefix, reason, sec, proto, portField, ip)
}

func TestParsePackets(t *testing.T) {
	sec := at("2026-11-22T10:00:00Z").Unix()
	tcp := record("unlisted", "198.51.100.7", 6, 443, sec)
	tests := []struct {
		name  string
		log   string
		opts  []Option
		dests []Dest
		bad   int
	}{
		{"docker timestamps, counted per destination", "2026-11-22T10:00:01Z " + tcp + "\n" +
			"2026-11-22T10:00:05Z " + tcp + "\n" +
			"2026-11-22T10:00:02Z " + record("special", "10.1.2.3", 6, 22, sec) + "\n" +
			"2026-11-22T10:00:03Z " + record("udp", "2001:db8::1", 17, 53, sec) + "\n" +
			"2026-11-22T10:00:04Z " + record("icmp", "198.51.100.7", 1, -1, sec) + "\n", nil, []Dest{
			{Addr: netip.MustParseAddr("198.51.100.7"), Port: 443, Proto: "tcp", Count: 2, First: at("2026-11-22T10:00:01Z"), Last: at("2026-11-22T10:00:05Z"), Reason: "unlisted", Why: "unlisted address or port"},
			{Addr: netip.MustParseAddr("10.1.2.3"), Port: 22, Proto: "tcp", Count: 1, First: at("2026-11-22T10:00:02Z"), Last: at("2026-11-22T10:00:02Z"), Reason: "special", Why: "private range"},
			{Addr: netip.MustParseAddr("198.51.100.7"), Port: 0, Proto: "icmp", Count: 1, First: at("2026-11-22T10:00:04Z"), Last: at("2026-11-22T10:00:04Z"), Reason: "icmp", Why: "ICMP"},
			{Addr: netip.MustParseAddr("2001:db8::1"), Port: 53, Proto: "udp", Count: 1, First: at("2026-11-22T10:00:03Z"), Last: at("2026-11-22T10:00:03Z"), Reason: "udp", Why: "UDP"},
		}, 0},
		{"no docker timestamp: the kernel's time", "egress-1  | " + tcp + "\r\n", nil, []Dest{
			{Addr: netip.MustParseAddr("198.51.100.7"), Port: 443, Proto: "tcp", Count: 1, First: at("2026-11-22T10:00:00.25Z"), Last: at("2026-11-22T10:00:00.25Z"), Reason: "unlisted", Why: "unlisted address or port"},
		}, 0},
		{"since", "2026-11-22T10:00:01Z " + tcp + "\n2026-11-22T10:00:09Z " + tcp + "\n", []Option{Since(at("2026-11-22T10:00:05Z"))}, []Dest{
			{Addr: netip.MustParseAddr("198.51.100.7"), Port: 443, Proto: "tcp", Count: 1, First: at("2026-11-22T10:00:09Z"), Last: at("2026-11-22T10:00:09Z"), Reason: "unlisted", Why: "unlisted address or port"},
		}, 0},
		{"ICMPv6 and other protocols by number", record("icmp", "2001:db8::2", 58, -1, sec) + "\n" + record("unlisted", "198.51.100.9", 132, -1, sec) + "\n", nil, []Dest{
			{Addr: netip.MustParseAddr("198.51.100.9"), Proto: "132", Count: 1, First: at("2026-11-22T10:00:00.25Z"), Last: at("2026-11-22T10:00:00.25Z"), Reason: "unlisted", Why: "unlisted address or port"},
			{Addr: netip.MustParseAddr("2001:db8::2"), Proto: "icmpv6", Count: 1, First: at("2026-11-22T10:00:00.25Z"), Last: at("2026-11-22T10:00:00.25Z"), Reason: "icmp", Why: "ICMP"},
		}, 0},
		{"hostile and malformed records are not counted", strings.Join([]string{
			record("unlisted", "\x1b]0;owned\x07", 6, 443, sec),                               // no address
			record("unlisted", "198.51.100.7\n", 6, 443, sec),                                 // not an address
			record("unlisted", "198.51.100.7", 6, 70000, sec),                                 // no port
			record("unlisted", "198.51.100.7", 300, 443, sec),                                 // no protocol
			record("unlisted", "198.51.100.7", -6, 443, sec),                                  // no protocol
			record("ulisted", "198.51.100.7", 6, 443, sec),                                    // unknown reason
			record("unlisted\x1b[2J", "198.51.100.7", 6, 443, sec),                            // unknown reason
			strings.Replace(tcp, prefix, "other-table:", 1),                                   // another prefix: not ours
			strings.Replace(tcp, `"dest_port": 443`, `"dest_port": "443"`, 1),                 // a string
			strings.Replace(tcp, `"dest_ip"`, `"dest_ip": 5, "x"`, 1),                         // a number
			`{"oob.prefix": "agentbox-refused:unlisted", "ip.protocol": 6, "dest_port": 443}`, // no address
			`{"oob.prefix": "agentbox-refused:unlisted"`,                                      // cut short
			`{"oob.prefix": ` + strings.Repeat(`[`, 100000) + `}`,                             // deep, and over MaxLine
		}, "\n") + "\n", nil, []Dest{}, 11},
		{"dnsmasq lines that look like records are names", "dnsmasq[1]: config {\"oob.prefix\":\"agentbox-refused:unlisted\"} is NXDOMAIN\n", nil, []Dest{}, 0},
		{"without Packets, records are ignored", tcp + "\n", []Option{}, []Dest{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			if opts == nil {
				opts = []Option{Packets(prefix, reasons)}
			} else if len(opts) > 0 {
				opts = append(opts, Packets(prefix, reasons))
			}
			rep, err := Parse(strings.NewReader(tc.log), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rep.Dests, tc.dests) {
				t.Errorf("dests:\n got %+v\nwant %+v", rep.Dests, tc.dests)
			}
			if rep.BadRecords != tc.bad {
				t.Errorf("BadRecords = %d, want %d", rep.BadRecords, tc.bad)
			}
		})
	}
}

func TestParsePacketsBounded(t *testing.T) {
	var b strings.Builder
	for i := range MaxDests + 5 {
		fmt.Fprintf(&b, "%s\n", record("unlisted", fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), 6, 443, 1))
	}
	rep, err := Parse(strings.NewReader(b.String()), Packets(prefix, reasons))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Dests) != MaxDests || rep.DroppedPackets != 5 {
		t.Fatalf("%d destinations, %d dropped; want %d and 5", len(rep.Dests), rep.DroppedPackets, MaxDests)
	}
}

func TestSuggestCIDRs(t *testing.T) {
	d := func(ip string, port uint16, proto, reason string, n int) Dest {
		return Dest{Addr: netip.MustParseAddr(ip), Port: port, Proto: proto, Reason: reason, Count: n}
	}
	got := SuggestCIDRs([]Dest{
		d("198.51.100.7", 443, "tcp", "unlisted", 3),
		d("198.51.100.7", 22, "tcp", "unlisted", 1),
		d("2001:db8::1", 8443, "tcp", "unlisted", 5),
		d("10.1.2.3", 443, "tcp", "special", 9),      // private: never
		d("198.51.100.8", 53, "udp", "udp", 9),       // UDP cannot be allowed
		d("198.51.100.9", 0, "icmp", "icmp", 9),      // nor ICMP
		d("198.51.100.10", 443, "tcp", "expired", 9), // a grant's
	}, "unlisted")
	want := []CIDRSuggestion{
		{CIDR: "2001:db8::1/128", Ports: []uint16{8443}, Count: 5},
		{CIDR: "198.51.100.7/32", Ports: []uint16{22, 443}, Count: 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if l := want[1].Line(); l != "    - {cidr: 198.51.100.7/32, ports: [22, 443]}   # refused 4 times" {
		t.Fatalf("Line() = %q", l)
	}
}

var _ = time.Second
