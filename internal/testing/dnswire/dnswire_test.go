package dnswire

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
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
	if _, err := ParseType("WKS"); err == nil {
		t.Error("ParseType(WKS) succeeded")
	}
	if typ, err := ParseType("mx"); err != nil || typ != 15 {
		t.Errorf("ParseType(mx) = %d, %v; want 15", typ, err)
	}
}

// TestForUDP: a reply larger than the sender takes over UDP goes out as
// the question with TC set; 512 bytes without EDNS0, its size with it.
func TestForUDP(t *testing.T) {
	plain, err := ParseQuery(mustQuery(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	edns, err := ParseQuery(mustQuery(t, 1232))
	if err != nil {
		t.Fatal(err)
	}
	if plain.UDPSize != 0 || edns.UDPSize != 1232 {
		t.Fatalf("UDP sizes %d and %d, want 0 and 1232", plain.UDPSize, edns.UDPSize)
	}
	for _, c := range []struct {
		q         Question
		answers   int
		truncated bool
	}{
		{plain, 1, false},
		{plain, 40, true}, // 40 A records: about 670 bytes
		{edns, 40, false}, // fits 1232
		{edns, 100, true}, // about 1630 bytes
		{Question{ID: 9, Name: "big.test", Type: TypeA, UDPSize: 100}, 1, false}, // never below 512
	} {
		var answers []Answer
		for i := range c.answers {
			answers = append(answers, Answer{Type: TypeA, TTL: 60, Value: fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)})
		}
		full, err := BuildReply(c.q, RcodeSuccess, answers)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := ForUDP(c.q, full)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ParseReply(msg)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID != c.q.ID || r.Truncated != c.truncated || (c.truncated && len(r.Answers) > 0) || (!c.truncated && len(r.Answers) != c.answers) {
			t.Errorf("%d answers (%d bytes) for UDP size %d: %d bytes, %+v", c.answers, len(full), c.q.UDPSize, len(msg), r)
		}
	}
}

// mustQuery is a query for big.test, with an EDNS0 record of udpSize
// unless it is 0.
func mustQuery(t *testing.T, udpSize uint16) []byte {
	t.Helper()
	m := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: 9, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName("big.test."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}},
	}
	if udpSize > 0 {
		var opt dnsmessage.ResourceHeader
		if err := opt.SetEDNS0(int(udpSize), dnsmessage.RCodeSuccess, false); err != nil {
			t.Fatal(err)
		}
		m.Additionals = []dnsmessage.Resource{{Header: opt, Body: &dnsmessage.OPTResource{}}}
	}
	msg, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}
