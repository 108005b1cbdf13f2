package denials

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/validate"
)

const t0 = "2026-11-22T10:00:00.000000001Z"

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// egressLog is a realistic log of egress as docker logs --timestamps
// writes it.
const egressLog = `2026-11-22T10:00:00.000000001Z agentbox-egress: starting
2026-11-22T10:00:00.100000000Z dnsmasq[25]: query[A] agentbox-probe.invalid from 127.0.0.1
2026-11-22T10:00:00.100000001Z dnsmasq[25]: config agentbox-probe.invalid is NXDOMAIN
2026-11-22T10:00:01.000000000Z dnsmasq[25]: query[A] evil.example from 172.18.0.2
2026-11-22T10:00:01.000000100Z dnsmasq[25]: config evil.example is NXDOMAIN
2026-11-22T10:00:02.000000000Z dnsmasq[25]: query[AAAA] EVIL.example from 172.18.0.2
2026-11-22T10:00:02.000000100Z dnsmasq[25]: config evil.example is NXDOMAIN
2026-11-22T10:00:03.000000000Z dnsmasq[25]: query[A] api.github.com from 172.18.0.2
2026-11-22T10:00:03.000000100Z dnsmasq[25]: forwarded api.github.com to 127.0.0.11
2026-11-22T10:00:03.500000000Z dnsmasq[25]: query[PTR] 1.0.0.127.in-addr.arpa from 127.0.0.1
2026-11-22T10:00:03.500000100Z dnsmasq[25]: config 1.0.0.127.in-addr.arpa is NXDOMAIN
2026-11-22T10:00:04.000000000Z dnsmasq[25]: config other.test is NXDOMAIN
2026-11-22T10:00:05.000000000Z agentbox-egress: rejected packets: dns=1 docker_dns=0 special=0 other=0 spoof=0 routing=0
2026-11-22T10:00:06.000000000Z agentbox-egress: rejected packets: dns=2 docker_dns=0 special=1 other=3 spoof=0 routing=0
`

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		log     string
		opts    []Option
		rows    []Row
		packets map[string]int
	}{
		{"timestamps", egressLog, []Option{Ignore("agentbox-probe.invalid")}, []Row{
			{Name: "evil.example", Count: 2, First: at("2026-11-22T10:00:01.0000001Z"), Last: at("2026-11-22T10:00:02.0000001Z"),
				Types: []string{"A", "AAAA"}, Why: whyName},
			{Name: "1.0.0.127.in-addr.arpa", Count: 1, First: at("2026-11-22T10:00:03.5000001Z"), Last: at("2026-11-22T10:00:03.5000001Z"),
				Types: []string{"PTR"}, Why: whyName},
			{Name: "other.test", Count: 1, First: at("2026-11-22T10:00:04Z"), Last: at("2026-11-22T10:00:04Z"), Why: whyName},
		}, map[string]int{"dns": 2, "special": 1, "other": 3}},
		{"since drops earlier lines", egressLog, []Option{Ignore("agentbox-probe.invalid"), Since(at("2026-11-22T10:00:02Z"))}, []Row{
			{Name: "1.0.0.127.in-addr.arpa", Count: 1, First: at("2026-11-22T10:00:03.5000001Z"), Last: at("2026-11-22T10:00:03.5000001Z"),
				Types: []string{"PTR"}, Why: whyName},
			{Name: "evil.example", Count: 1, First: at("2026-11-22T10:00:02.0000001Z"), Last: at("2026-11-22T10:00:02.0000001Z"),
				Types: []string{"AAAA"}, Why: whyName},
			{Name: "other.test", Count: 1, First: at("2026-11-22T10:00:04Z"), Last: at("2026-11-22T10:00:04Z"), Why: whyName},
		}, map[string]int{"dns": 2, "special": 1, "other": 3}},
		{"since after everything", egressLog, []Option{Since(at("2027-01-01T00:00:00Z"))}, []Row{}, map[string]int{}},
		{"no timestamps, compose prefix, CRLF", "egress-1  | dnsmasq[9]: query[A] evil.example from 172.18.0.2\r\n" +
			"egress-1  | dnsmasq[9]: config evil.example is NXDOMAIN\r\n" +
			"dnsmasq[9]: config agentbox-probe.invalid is NXDOMAIN\n" +
			"dnsmasq[9]: config EVIL.example is NXDOMAIN", nil, []Row{
			{Name: "evil.example", Count: 2, Types: []string{"A"}, Why: whyName},
			{Name: "agentbox-probe.invalid", Count: 1, Why: whyName},
		}, map[string]int{}},
		{"type of another pid or name not taken", "dnsmasq[1]: query[MX] a.example from x\n" +
			"dnsmasq[2]: config a.example is NXDOMAIN\n" +
			"dnsmasq[2]: query[TXT] b.example from x\n" +
			"dnsmasq[2]: config c.example is NXDOMAIN\n", nil, []Row{
			{Name: "a.example", Count: 1, Why: whyName},
			{Name: "c.example", Count: 1, Why: whyName},
		}, map[string]int{}},
		{"hostile names", "dnsmasq[1]: config \x1b]0;owned\x07.example is NXDOMAIN\n" +
			"dnsmasq[1]: config with space.example is NXDOMAIN\n" +
			"dnsmasq[1]: config is NXDOMAIN\n" +
			"agentbox-egress: rejected packets: dns=x\n", nil, []Row{
			{Name: "\x1b]0;owned\x07.example", Count: 1, Why: whyName},
			{Name: "with space.example", Count: 1, Why: whyName},
		}, map[string]int{}},
		{"a long line is skipped, the next read", "dnsmasq[1]: config " + strings.Repeat("a", MaxLine) + ".example is NXDOMAIN\n" +
			"dnsmasq[1]: config b.example is NXDOMAIN\n", nil, []Row{
			{Name: "b.example", Count: 1, Why: whyName},
		}, map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Parse(strings.NewReader(tt.log), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rep.Rows, tt.rows) {
				t.Errorf("rows\n got %+v\nwant %+v", rep.Rows, tt.rows)
			}
			if !reflect.DeepEqual(rep.Packets, tt.packets) {
				t.Errorf("packets %v, want %v", rep.Packets, tt.packets)
			}
		})
	}
}

// TestParseBounds: a log of more names than MaxNames keeps MaxNames and
// counts the rest; a line longer than MaxLine is skipped and counted.
func TestParseBounds(t *testing.T) {
	var b strings.Builder
	for i := range MaxNames + 5 {
		fmt.Fprintf(&b, "%s dnsmasq[1]: config n%d.example is NXDOMAIN\n", t0, i)
	}
	fmt.Fprintf(&b, "%s dnsmasq[1]: config n0.example is NXDOMAIN\n", t0)
	b.WriteString(strings.Repeat("x", 3*MaxLine))
	rep, err := Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != MaxNames || rep.Dropped != 5 || rep.Skipped != 1 || rep.Rows[0].Name != "n0.example" || rep.Rows[0].Count != 2 {
		t.Errorf("rows %d, dropped %d, skipped %d, first %+v", len(rep.Rows), rep.Dropped, rep.Skipped, rep.Rows[0])
	}
}

// FuzzParse: whatever the log, Parse returns and keeps its bounds, and
// every suggestion is a valid domain on one line.
func FuzzParse(f *testing.F) {
	f.Add(egressLog)
	f.Add("dnsmasq[1]: query[A] a.example from x\ndnsmasq[1]: config a.example is NXDOMAIN\n")
	f.Add("x | 2026-11-22T10:00:00Z dnsmasq[1]: config \x00\x1b.example is NXDOMAIN\r\n")
	f.Fuzz(func(t *testing.T, log string) {
		rep, err := Parse(strings.NewReader(log), Since(at(t0)))
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Rows) > MaxNames {
			t.Fatalf("%d rows", len(rep.Rows))
		}
		for _, r := range rep.Rows {
			if r.Count < 1 || len(r.Types) > maxTypes || r.Last.Before(r.First) {
				t.Errorf("row %+v", r)
			}
		}
		for _, s := range Suggest(rep.Rows) {
			if !strings.HasPrefix(s.Line(), "    - ") || strings.ContainsAny(s.Line(), "\n\r\x1b") {
				t.Errorf("line %q", s.Line())
			}
			if _, _, err := validate.Domain(s.Domain); err != nil {
				t.Errorf("suggested an invalid domain: %v", err)
			}
		}
	})
}
