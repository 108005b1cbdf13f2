package dnswire

import (
	"slices"
	"strings"
	"testing"
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
