package denials

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxDests bounds the refused destinations Parse keeps; the packets of the
// rest count in Report.DroppedPackets.
const MaxDests = 10000

// Dest is one refused destination: the logged packets to one address, port
// and protocol that the firewall refused for one reason.
type Dest struct {
	Addr   netip.Addr `json:"address"`
	Port   uint16     `json:"port"`     // 0 for ICMP and protocols without ports
	Proto  string     `json:"protocol"` // tcp, udp, icmp, icmpv6, or the IP protocol's number
	Count  int        `json:"count"`    // logged packets: at most the firewall's log limit allows
	First  time.Time  `json:"first_seen"`
	Last   time.Time  `json:"last_seen"`
	Reason string     `json:"reason"` // the key of the firewall's log prefix: "unlisted", "special", ...
	Why    string     `json:"why"`    // what Reason means
}

// Packets makes Parse count the firewall's per-packet records: the JSON
// lines ulogd2 writes, whose oob.prefix is prefix followed by a key of
// reasons (which says what the key means). Other records are not counted;
// a record with prefix and an unknown key, or a malformed one, counts in
// Report.BadRecords.
func Packets(prefix string, reasons map[string]string) Option {
	return func(p *parser) { p.logPrefix, p.reasons = prefix, reasons }
}

// packetRecord is the part of ulogd2's JSON record that Parse reads. The
// agent controls the packet, not the record: ulogd2 writes only numbers
// and addresses of the headers (the prefix is the firewall's), and every
// field is checked all the same.
type packetRecord struct {
	Prefix string `json:"oob.prefix"`
	Sec    int64  `json:"oob.time.sec"`
	Usec   int64  `json:"oob.time.usec"`
	Proto  *int   `json:"ip.protocol"`
	DestIP string `json:"dest_ip"`
	Port   *int   `json:"dest_port"`
}

type destKey struct {
	addr         netip.Addr
	port         uint16
	proto, label string
}

// record counts one JSON line of the log, logged at at (zero: the line had
// no timestamp of Docker's; the kernel's time in the record is taken).
func (p *parser) record(line string, at time.Time) {
	var r packetRecord
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		if strings.Contains(line, `"`+p.logPrefix) {
			p.rep.BadRecords++
		}
		return
	}
	key, ok := strings.CutPrefix(r.Prefix, p.logPrefix)
	if !ok {
		return // another table's, or not the firewall's
	}
	why, known := p.reasons[key]
	addr, err := netip.ParseAddr(r.DestIP)
	if !known || err != nil || addr.Zone() != "" || r.Proto == nil || *r.Proto < 0 || *r.Proto > 255 ||
		r.Port != nil && (*r.Port < 0 || *r.Port > 65535) {
		p.rep.BadRecords++
		return
	}
	k := destKey{addr: addr.Unmap(), proto: protoName(*r.Proto), label: key}
	if r.Port != nil {
		k.port = uint16(*r.Port)
	}
	if at.IsZero() && r.Sec > 0 && r.Usec >= 0 && r.Usec < 1e6 {
		at = time.Unix(r.Sec, r.Usec*1000).UTC()
	}
	d, ok := p.dests[k]
	if !ok {
		if len(p.dests) >= MaxDests {
			p.rep.DroppedPackets++
			return
		}
		d = &Dest{Addr: k.addr, Port: k.port, Proto: k.proto, Reason: key, Why: why, First: at}
		p.dests[k] = d
	}
	d.Count++
	if !at.IsZero() && (d.First.IsZero() || at.Before(d.First)) {
		d.First = at
	}
	if at.After(d.Last) {
		d.Last = at
	}
}

// protoName names an IP protocol number as blocked prints it.
func protoName(n int) string {
	switch n {
	case 1:
		return "icmp"
	case 6:
		return "tcp"
	case 17:
		return "udp"
	case 58:
		return "icmpv6"
	}
	return strconv.Itoa(n)
}

// sortedDests returns the destinations by count (most first), then
// address, port, protocol and reason.
func (p *parser) sortedDests() []Dest {
	for _, d := range p.dests {
		p.portReason(d)
	}
	out := make([]Dest, 0, len(p.dests))
	for _, d := range p.dests {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Dest) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		if c := a.Addr.Compare(b.Addr); c != 0 {
			return c
		}
		if a.Port != b.Port {
			return int(a.Port) - int(b.Port)
		}
		if c := strings.Compare(a.Proto, b.Proto); c != 0 {
			return c
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	return out
}

// CIDRSuggestion is one entry of network.cidrs that would allow what was
// refused: one address, the TCP ports it was refused on.
type CIDRSuggestion struct {
	CIDR  string   `json:"cidr"` // the address as a /32 or /128
	Ports []uint16 `json:"ports"`
	Count int      `json:"count"` // logged packets
}

// SuggestCIDRs returns network.cidrs entries for the refused destinations
// of reason (the firewall's key for TCP to a public address that the policy
// does not list), one per address with its ports, by count (most first),
// then address. It suggests nothing for other reasons: private and special
// ranges, UDP and ICMP (the firewall allows TCP only), DNS, grants. It never
// widens an address to a range: one address of a CDN or a cloud says
// nothing of its neighbours, and such an address changes; a name is the
// better entry when the agent used one.
func SuggestCIDRs(dests []Dest, reason string) []CIDRSuggestion {
	byAddr := map[netip.Addr]*CIDRSuggestion{}
	for _, d := range dests {
		if d.Reason != reason || d.Proto != "tcp" || d.Port == 0 {
			continue
		}
		s, ok := byAddr[d.Addr]
		if !ok {
			s = &CIDRSuggestion{CIDR: netip.PrefixFrom(d.Addr, d.Addr.BitLen()).String()}
			byAddr[d.Addr] = s
		}
		if !slices.Contains(s.Ports, d.Port) {
			s.Ports = append(s.Ports, d.Port)
			slices.Sort(s.Ports)
		}
		s.Count += d.Count
	}
	addrs := make([]netip.Addr, 0, len(byAddr))
	for a := range byAddr {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int {
		if byAddr[a].Count != byAddr[b].Count {
			return byAddr[b].Count - byAddr[a].Count
		}
		return a.Compare(b)
	})
	out := make([]CIDRSuggestion, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, *byAddr[a])
	}
	return out
}

// Line is the suggestion as a YAML list item of network.cidrs (indented
// for a paste under "network:" / "  cidrs:"):
// `    - {cidr: 198.51.100.7/32, ports: [443]}   # refused 3 times`.
func (s CIDRSuggestion) Line() string {
	ports := make([]string, len(s.Ports))
	for i, p := range s.Ports {
		ports[i] = strconv.Itoa(int(p))
	}
	times := "times"
	if s.Count == 1 {
		times = "time"
	}
	return fmt.Sprintf("    - {cidr: %s, ports: [%s]}   # refused %d %s", s.CIDR, strings.Join(ports, ", "), s.Count, times)
}
