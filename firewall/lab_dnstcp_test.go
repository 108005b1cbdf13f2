package firewall_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// TestLabDNSOverTCP: DNS over TCP through the filter resolver, with the
// lab's remote upstream and with Docker's embedded resolver (127.0.0.11 on
// loopback behind a DNAT to one port for UDP and another for TCP, which
// forwards to the remote upstream as root), as under compose, and with
// such a resolver on ::1 (where dnsmasq asks from ::1 itself, so that the
// SNAT like Docker's, for packets to the resolver's address, gives the
// resolver's early ACK port 53 back even outside the zone).
//   - Pipelined: queries written at once on one TCP connection, as RFC 7766
//     lets a client, the first for a name the filter refuses: each gets
//     its answer.
//   - Large: an answer too large for UDP comes truncated over UDP and
//     whole over TCP, and its addresses enter the allow set.
func TestLabDNSOverTCP(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(t *testing.T) *lab
	}{
		{"Remote", func(t *testing.T) *lab { l := newLab(t); l.startReady(); return l }},
		{"Docker", func(t *testing.T) *lab { l, _ := dockerLab{upstream: "127.0.0.11", forward: true}.build(t); return l }},
		{"DockerLikeIPv6", func(t *testing.T) *lab { l, _ := dockerLab{upstream: "::1", forward: true}.build(t); return l }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.build(t)
			t.Run("Pipelined", func(t *testing.T) { testPipelined(t, l.on(t)) })
			t.Run("Large", func(t *testing.T) { testLargeAnswer(t, l.on(t)) })
		})
	}
}

// pipelined are the queries of testPipelined and their answers: refused
// names (NXDOMAIN from the filter itself) before, between and after names
// the filter forwards, fresh and cached.
var pipelined = []struct {
	q     netlab.DNSQuery
	rcode string
	want  []string
}{
	{netlab.DNSQuery{Name: "secret.exfil.test", Type: "A"}, "NXDOMAIN", nil},
	{netlab.DNSQuery{Name: "allowed.test", Type: "A"}, "NOERROR", []string{allowedV4}},
	{netlab.DNSQuery{Name: "pipe.wild.test", Type: "A"}, "NOERROR", []string{wildV4}},
	{netlab.DNSQuery{Name: "other.exfil.test", Type: "TXT"}, "NXDOMAIN", nil},
	{netlab.DNSQuery{Name: "pipe.wild.test", Type: "AAAA"}, "NOERROR", []string{"2001:2::20"}},
	{netlab.DNSQuery{Name: "allowed.test", Type: "A"}, "NOERROR", []string{allowedV4}},
	{netlab.DNSQuery{Name: "third.exfil.test", Type: "A"}, "NXDOMAIN", nil},
}

func testPipelined(t *testing.T, l *lab) {
	req := netlab.Request{Op: "dnspipe", Addr: agentResolver, Timeout: 5 * time.Second}
	for _, p := range pipelined {
		req.Queries = append(req.Queries, p.q)
	}
	r := l.do(req)
	if !r.OK {
		t.Errorf("%d queries on one TCP connection: %s", len(req.Queries), r.Err)
	}
	for i, p := range pipelined {
		if i >= len(r.Replies) {
			break
		}
		got := r.Replies[i]
		if got.Rcode != p.rcode || !slices.Equal(got.Answers, p.want) {
			t.Errorf("query %d, %s %s: %+v, want %s %v", i+1, p.q.Type, p.q.Name, got, p.rcode, p.want)
		}
	}
}

// testLargeAnswer: big.wild.test has 100 addresses (bigAnswer). Over UDP
// the agent gets a truncated answer, as from any resolver, which tells it
// to ask over TCP; over TCP it gets every address, and so do the sets.
func testLargeAnswer(t *testing.T, l *lab) {
	mark := l.eventCount()
	udp := l.do(dnsReq(agentResolver, "udp", "big.wild.test", "A"))
	if !udp.OK || !udp.TC {
		t.Errorf("over UDP: %v, want a truncated answer", udp)
	}
	tcp := l.do(dnsReq(agentResolver, "tcp", "big.wild.test", "A"))
	got := slices.Clone(tcp.Answers)
	slices.Sort(got)
	want := slices.Sorted(slices.Values(bigAnswer))
	if !tcp.OK || tcp.Rcode != "NOERROR" || tcp.TC || !slices.Equal(got, want) {
		t.Errorf("over TCP: %s %s, %d answers (want %d): %s", tcp.Rcode, tcp.Err, len(tcp.Answers), len(bigAnswer), strings.Join(tcp.Answers, " "))
	}
	var asked []string
	for _, e := range l.events(mark) {
		if e.Kind == "dns" && e.Name == "big.wild.test" {
			asked = append(asked, e.Net)
		}
	}
	if !slices.Contains(asked, "tcp") {
		t.Errorf("the upstream was asked for big.wild.test over %v, never over TCP", asked)
	}
	for _, a := range []string{bigAnswer[0], bigAnswer[len(bigAnswer)-1]} {
		if !l.setHas("allow_v4_443", a) {
			t.Errorf("allow_v4_443 lacks %s, an address of big.wild.test", a)
		}
	}
}
