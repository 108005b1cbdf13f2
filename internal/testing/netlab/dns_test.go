package netlab

import (
	"net"
	"slices"
	"strconv"
	"testing"

	_ "github.com/agentbox-dev/agentbox/internal/testing/golden" // the shared -update flag
)

func TestServerAnswer(t *testing.T) {
	d := &DNSServer{Records: []Record{
		{Name: "v6.test", Type: "AAAA", Values: []string{"2001:2::60"}},
		{Name: "rotate.test", Type: "A", Values: []string{"198.18.1.1", "198.18.1.2"}, Rotate: true},
		{Name: "alias.test", Type: "CNAME", Values: []string{"v6.test"}},
		{Name: "loop.test", Type: "CNAME", Values: []string{"loop.test"}},
		{Name: "moved.test", Type: "DNAME", Values: []string{"alias.test"}},
		{Name: "*", Type: "A", Values: []string{"198.18.0.11"}},
	}}
	s := newServer()
	ask := func(name string, typ uint16) (string, []string) {
		t.Helper()
		msg, err := s.answer(d, Question{ID: 7, Name: name, Type: typ})
		if err != nil {
			t.Fatal(err)
		}
		r, err := ParseReply(msg)
		if err != nil {
			t.Fatal(err)
		}
		var values []string
		for _, a := range r.Answers {
			values = append(values, a.Value)
		}
		return RcodeName(r.Rcode), values
	}
	for _, c := range []struct {
		name  string
		typ   uint16
		rcode string
		want  []string
	}{
		{"v6.test", TypeAAAA, "NOERROR", []string{"2001:2::60"}},
		{"a.v6.test", TypeAAAA, "NOERROR", []string{"2001:2::60"}},
		{"v6.test", TypeA, "NOERROR", nil}, // no data: the first match decides
		{"rotate.test", TypeA, "NOERROR", []string{"198.18.1.1"}},
		{"rotate.test", TypeA, "NOERROR", []string{"198.18.1.2"}},
		{"rotate.test", TypeA, "NOERROR", []string{"198.18.1.1"}},
		{"other.test", TypeA, "NOERROR", []string{"198.18.0.11"}},
		{"other.test", TypeTXT, "NOERROR", nil},
		{"a.alias.test", TypeAAAA, "NOERROR", []string{"v6.test", "2001:2::60"}}, // the chain, then the target's
		{"alias.test", TypeCNAME, "NOERROR", []string{"v6.test"}},
		// The DNAME, the CNAME it makes, then the chain on.
		{"a.moved.test", TypeAAAA, "NOERROR", []string{"alias.test", "a.alias.test", "v6.test", "2001:2::60"}},
		{"moved.test", TypeDNAME, "NOERROR", []string{"alias.test"}},
		{"loop.test", TypeA, "NOERROR", []string{"loop.test", "loop.test", "loop.test", "loop.test", "loop.test", "loop.test", "loop.test", "loop.test"}},
	} {
		rcode, values := ask(c.name, c.typ)
		if rcode != c.rcode || !slices.Equal(values, c.want) {
			t.Errorf("%s type %d: %s %q, want %s %q", c.name, c.typ, rcode, values, c.rcode, c.want)
		}
	}
	d.Records = d.Records[:1]
	if rcode, _ := ask("other.test", TypeA); rcode != "NXDOMAIN" {
		t.Errorf("unmatched name: %s, want NXDOMAIN", rcode)
	}
}

// TestServerTruncatesUDP: over UDP an answer larger than 512 bytes goes
// out as the question with TC set; over TCP it goes out whole.
func TestServerTruncatesUDP(t *testing.T) {
	var many []string
	for i := 1; i <= 60; i++ {
		many = append(many, "198.18.2."+strconv.Itoa(i))
	}
	d := &DNSServer{Records: []Record{{Name: "big.test", Type: "A", Values: many}}}
	s := newServer()
	q, err := BuildQuery(7, "big.test", TypeA)
	if err != nil {
		t.Fatal(err)
	}
	addr := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}
	for _, udp := range []bool{true, false} {
		r, err := ParseReply(s.query(d, q, addr, addr, udp))
		if err != nil {
			t.Fatal(err)
		}
		if wantTC := udp; r.Truncated != wantTC || (udp && len(r.Answers) != 0) || (!udp && len(r.Answers) != len(many)) {
			t.Errorf("udp %v: TC %v with %d answers", udp, r.Truncated, len(r.Answers))
		}
	}
	if events := len(s.events); events != 2 {
		t.Errorf("%d events, want 2", events)
	}
}
