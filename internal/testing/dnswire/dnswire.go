// Package dnswire is the one DNS message codec of the test infrastructure
// (the network lab's hosts and the e2e's fake upstream): queries and
// replies of A, AAAA, TXT and CNAME records, on golang.org/x/net/dns/dnsmessage.
package dnswire

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// Record types and response codes the tests use.
const (
	TypeA     = uint16(dnsmessage.TypeA)
	TypeTXT   = uint16(dnsmessage.TypeTXT)
	TypeAAAA  = uint16(dnsmessage.TypeAAAA)
	TypeCNAME = uint16(dnsmessage.TypeCNAME)
	TypeDNAME = uint16(39) // RFC 6672; dnsmessage has no type of its own for it

	RcodeSuccess  = int(dnsmessage.RCodeSuccess)
	RcodeServFail = int(dnsmessage.RCodeServerFailure)
	RcodeNXDomain = int(dnsmessage.RCodeNameError)
	RcodeRefused  = int(dnsmessage.RCodeRefused)
)

// typeNames are the types a query may ask for; replies of A, AAAA, TXT,
// CNAME and DNAME only are built, and other answers parse to their data in hexadecimal.
var typeNames = map[string]uint16{
	"A": TypeA, "TXT": TypeTXT, "AAAA": TypeAAAA,
	"NS": uint16(dnsmessage.TypeNS), "CNAME": uint16(dnsmessage.TypeCNAME), "DNAME": TypeDNAME, "SOA": uint16(dnsmessage.TypeSOA),
	"PTR": uint16(dnsmessage.TypePTR), "MX": uint16(dnsmessage.TypeMX), "SRV": uint16(dnsmessage.TypeSRV),
	"HTTPS": 65, "ANY": uint16(dnsmessage.TypeALL),
}

// ParseType returns the type code of a name of typeNames: "A", "AAAA",
// "TXT", "MX", ...
func ParseType(s string) (uint16, error) {
	if t, ok := typeNames[strings.ToUpper(s)]; ok {
		return t, nil
	}
	return 0, fmt.Errorf("unknown DNS type %q (A, AAAA, TXT, NS, CNAME, DNAME, SOA, PTR, MX, SRV, HTTPS, ANY)", s)
}

// TypeName names a record type.
func TypeName(t uint16) string {
	for name, v := range typeNames {
		if v == t {
			return name
		}
	}
	return fmt.Sprintf("TYPE%d", t)
}

// RcodeName names a response code.
func RcodeName(rcode int) string {
	switch rcode {
	case RcodeSuccess:
		return "NOERROR"
	case RcodeServFail:
		return "SERVFAIL"
	case RcodeNXDomain:
		return "NXDOMAIN"
	case RcodeRefused:
		return "REFUSED"
	}
	return fmt.Sprintf("RCODE%d", rcode)
}

// Question is the question of a DNS message.
type Question struct {
	ID      uint16
	Name    string // lower case, no trailing dot
	Type    uint16
	RD      bool
	UDPSize uint16 // the largest UDP reply the sender takes (EDNS0); 0 without EDNS0
}

// Answer is a record of an answer section: an address, a TXT string or a
// CNAME's or DNAME's target.
type Answer struct {
	Name  string // its owner; "" is the question's name
	Type  uint16
	TTL   uint32
	Value string // the address for A and AAAA, the text for TXT, hex otherwise
}

// Reply is a parsed DNS response.
type Reply struct {
	ID        uint16
	Rcode     int
	Truncated bool // TC: the answer did not fit; ask again over TCP
	Answers   []Answer
}

// Values returns the values of the answers of type t.
func (r *Reply) Values(t uint16) []string {
	var out []string
	for _, a := range r.Answers {
		if a.Type == t {
			out = append(out, a.Value)
		}
	}
	return out
}

func newName(name string) (dnsmessage.Name, error) {
	name = strings.TrimSuffix(name, ".")
	for _, label := range strings.Split(name, ".") {
		if name != "" && (label == "" || len(label) > 63) {
			return dnsmessage.Name{}, fmt.Errorf("invalid DNS name %q", name)
		}
	}
	n, err := dnsmessage.NewName(name + ".")
	if err != nil || len(name) > 253 {
		return dnsmessage.Name{}, fmt.Errorf("invalid DNS name %q", name)
	}
	return n, nil
}

// BuildQuery encodes a recursive query for name and type t.
func BuildQuery(id uint16, name string, t uint16) ([]byte, error) {
	n, err := newName(name)
	if err != nil {
		return nil, err
	}
	m := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: n, Type: dnsmessage.Type(t), Class: dnsmessage.ClassINET}},
	}
	return m.Pack()
}

// ParseQuery decodes the question of a query.
func ParseQuery(msg []byte) (Question, error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return Question{}, err
	}
	if h.Response {
		return Question{}, errors.New("not a query")
	}
	qs, err := p.AllQuestions()
	if err != nil {
		return Question{}, err
	}
	if len(qs) != 1 {
		return Question{}, errors.New("not a query with one question")
	}
	q := Question{ID: h.ID, Name: canonical(qs[0].Name), Type: uint16(qs[0].Type), RD: h.RecursionDesired}
	if err := p.SkipAllAnswers(); err != nil {
		return Question{}, err
	}
	if err := p.SkipAllAuthorities(); err != nil {
		return Question{}, err
	}
	for {
		rh, err := p.AdditionalHeader()
		if errors.Is(err, dnsmessage.ErrSectionDone) {
			return q, nil
		}
		if err != nil {
			return Question{}, err
		}
		if rh.Type == dnsmessage.TypeOPT {
			q.UDPSize = uint16(rh.Class) // an OPT record's class is the sender's UDP size
		}
		if err := p.SkipAdditional(); err != nil {
			return Question{}, err
		}
	}
}

// minUDPSize is the size of a UDP reply that every sender takes (RFC 1035).
const minUDPSize = 512

// ForUDP returns reply, the answer to q, as a server sends it over UDP: as
// it is when it fits the size q's sender takes (512 bytes, or more with
// EDNS0), else truncated: the question alone with TC set, which tells the
// sender to ask again over TCP.
func ForUDP(q Question, reply []byte) ([]byte, error) {
	if len(reply) <= max(minUDPSize, int(q.UDPSize)) {
		return reply, nil
	}
	var p dnsmessage.Parser
	h, err := p.Start(reply)
	if err != nil {
		return nil, err
	}
	qs, err := p.AllQuestions()
	if err != nil {
		return nil, err
	}
	h.Truncated = true
	m := dnsmessage.Message{Header: h, Questions: qs}
	return m.Pack()
}

func canonical(n dnsmessage.Name) string {
	return strings.ToLower(strings.TrimSuffix(n.String(), "."))
}

// BuildReply encodes an authoritative answer to q.
func BuildReply(q Question, rcode int, answers []Answer) ([]byte, error) {
	n, err := newName(q.Name)
	if err != nil {
		return nil, err
	}
	m := dnsmessage.Message{
		Header: dnsmessage.Header{ID: q.ID, Response: true, Authoritative: true, RecursionDesired: q.RD,
			RecursionAvailable: true, RCode: dnsmessage.RCode(rcode)},
		Questions: []dnsmessage.Question{{Name: n, Type: dnsmessage.Type(q.Type), Class: dnsmessage.ClassINET}},
	}
	for _, a := range answers {
		body, err := resource(a)
		if err != nil {
			return nil, err
		}
		owner := n
		if a.Name != "" {
			if owner, err = newName(a.Name); err != nil {
				return nil, err
			}
		}
		m.Answers = append(m.Answers, dnsmessage.Resource{
			Header: dnsmessage.ResourceHeader{Name: owner, Type: dnsmessage.Type(a.Type), Class: dnsmessage.ClassINET, TTL: a.TTL},
			Body:   body,
		})
	}
	return m.Pack()
}

func resource(a Answer) (dnsmessage.ResourceBody, error) {
	switch a.Type {
	case TypeA, TypeAAAA:
		ip, err := netip.ParseAddr(a.Value)
		if err != nil || ip.Is4() != (a.Type == TypeA) {
			return nil, fmt.Errorf("bad address %q for type %d", a.Value, a.Type)
		}
		if a.Type == TypeA {
			return &dnsmessage.AResource{A: ip.As4()}, nil
		}
		return &dnsmessage.AAAAResource{AAAA: ip.As16()}, nil
	case TypeTXT:
		if len(a.Value) > 255 {
			return nil, fmt.Errorf("TXT string of %d bytes", len(a.Value))
		}
		return &dnsmessage.TXTResource{TXT: []string{a.Value}}, nil
	case TypeCNAME:
		target, err := newName(a.Value)
		if err != nil {
			return nil, err
		}
		return &dnsmessage.CNAMEResource{CNAME: target}, nil
	case TypeDNAME:
		target, err := newName(a.Value)
		if err != nil {
			return nil, err
		}
		// The target uncompressed (RFC 6672 2.5): labels, then the root.
		var data []byte
		for _, label := range strings.Split(strings.TrimSuffix(target.String(), "."), ".") {
			data = append(append(data, byte(len(label))), label...)
		}
		return &dnsmessage.UnknownResource{Type: dnsmessage.Type(TypeDNAME), Data: append(data, 0)}, nil
	}
	return nil, fmt.Errorf("cannot encode type %d", a.Type)
}

// ParseReply decodes a response: its code and answer section.
func ParseReply(msg []byte) (*Reply, error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil, err
	}
	if !h.Response {
		return nil, errors.New("not a DNS response")
	}
	if err := p.SkipAllQuestions(); err != nil {
		return nil, err
	}
	r := &Reply{ID: h.ID, Rcode: int(h.RCode), Truncated: h.Truncated}
	for {
		rh, err := p.AnswerHeader()
		if errors.Is(err, dnsmessage.ErrSectionDone) {
			return r, nil
		}
		if err != nil {
			return nil, err
		}
		a := Answer{Name: canonical(rh.Name), Type: uint16(rh.Type), TTL: rh.TTL}
		if a.Value, err = answerValue(&p, rh.Type); err != nil {
			return nil, err
		}
		r.Answers = append(r.Answers, a)
	}
}

func answerValue(p *dnsmessage.Parser, t dnsmessage.Type) (string, error) {
	switch t {
	case dnsmessage.TypeA:
		a, err := p.AResource()
		return netip.AddrFrom4(a.A).String(), err
	case dnsmessage.TypeAAAA:
		a, err := p.AAAAResource()
		return netip.AddrFrom16(a.AAAA).String(), err
	case dnsmessage.TypeTXT:
		a, err := p.TXTResource()
		return strings.Join(a.TXT, ""), err
	case dnsmessage.TypeCNAME:
		a, err := p.CNAMEResource()
		return canonical(a.CNAME), err
	}
	u, err := p.UnknownResource()
	if err == nil && uint16(t) == TypeDNAME {
		if name, ok := uncompressed(u.Data); ok {
			return name, nil
		}
	}
	return fmt.Sprintf("%x", u.Data), err
}

// uncompressed decodes a name of uncompressed labels that fills data.
func uncompressed(data []byte) (string, bool) {
	var labels []string
	for len(data) > 0 {
		n := int(data[0])
		if n == 0 {
			return strings.ToLower(strings.Join(labels, ".")), len(data) == 1
		}
		if n > 63 || len(data) < 1+n {
			return "", false
		}
		labels = append(labels, string(data[1:1+n]))
		data = data[1+n:]
	}
	return "", false
}
