package netlab

import (
	"slices"
	"strings"
	"testing"

	_ "github.com/agentbox-dev/agentbox/internal/golden" // the shared -update flag
)

func TestDNSRoundTrip(t *testing.T) {
	q, err := BuildQuery(0x6162, "Sub.Example.TEST.", TypeAAAA)
	if err != nil {
		t.Fatal(err)
	}
	question, err := ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Question{ID: 0x6162, Name: "sub.example.test", Type: TypeAAAA, RD: true}); question != want {
		t.Fatalf("ParseQuery = %+v, want %+v", question, want)
	}
	reply, err := BuildReply(question, RcodeSuccess, []Answer{
		{Type: TypeAAAA, TTL: 60, Value: "2001:2::10"},
		{Type: TypeAAAA, TTL: 60, Value: "2001:2::11"},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseReply(reply)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != 0x6162 || r.Rcode != RcodeSuccess || !slices.Equal(r.Values(TypeAAAA), []string{"2001:2::10", "2001:2::11"}) {
		t.Errorf("ParseReply = %+v", r)
	}

	txt, _ := BuildReply(question, RcodeNXDomain, []Answer{{Type: TypeTXT, Value: "hello"}})
	if r, err := ParseReply(txt); err != nil || r.Rcode != RcodeNXDomain || !slices.Equal(r.Values(TypeTXT), []string{"hello"}) {
		t.Errorf("TXT reply: %+v, %v", r, err)
	}
}

func TestDNSRejects(t *testing.T) {
	for _, name := range []string{strings.Repeat("a", 64) + ".test", "a..test", strings.Repeat("abcdefg.", 40)} {
		if _, err := BuildQuery(1, name, TypeA); err == nil {
			t.Errorf("BuildQuery(%q) succeeded", name)
		}
	}
	for _, msg := range [][]byte{nil, {0, 1, 0x81, 0x80}, {0, 1, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 0xc0, 12}} {
		if _, err := ParseReply(msg); err == nil {
			t.Errorf("ParseReply(%x) succeeded", msg)
		}
	}
	if _, err := ParseType("MX"); err == nil {
		t.Error("ParseType(MX) succeeded")
	}
}

func TestServerAnswer(t *testing.T) {
	d := &DNSServer{Records: []Record{
		{Name: "v6.test", Type: "AAAA", Values: []string{"2001:2::60"}},
		{Name: "rotate.test", Type: "A", Values: []string{"198.18.1.1", "198.18.1.2"}, Rotate: true},
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
