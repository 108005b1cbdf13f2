package netlab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// DNS record types and response codes the lab uses.
const (
	TypeA    uint16 = 1
	TypeTXT  uint16 = 16
	TypeAAAA uint16 = 28

	RcodeSuccess  = 0
	RcodeServFail = 2
	RcodeNXDomain = 3
	RcodeRefused  = 5
)

var typeNames = map[string]uint16{"A": TypeA, "TXT": TypeTXT, "AAAA": TypeAAAA}

// ParseType returns the type code of "A", "AAAA" or "TXT".
func ParseType(s string) (uint16, error) {
	if t, ok := typeNames[strings.ToUpper(s)]; ok {
		return t, nil
	}
	return 0, fmt.Errorf("unknown DNS type %q (A, AAAA, TXT)", s)
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
	ID   uint16
	Name string // lower case, no trailing dot
	Type uint16
	RD   bool
}

// Answer is a record of an answer section: an address or a TXT string.
type Answer struct {
	Type  uint16
	TTL   uint32
	Value string // the address for A and AAAA, the text for TXT, hex otherwise
}

// Reply is a parsed DNS response.
type Reply struct {
	ID      uint16
	Rcode   int
	Answers []Answer
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

// BuildQuery encodes a recursive query for name and type t.
func BuildQuery(id uint16, name string, t uint16) ([]byte, error) {
	b := binary.BigEndian.AppendUint16(nil, id)
	b = append(b, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0) // RD; one question
	b, err := appendName(b, name)
	if err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint16(b, t)
	return binary.BigEndian.AppendUint16(b, 1), nil // class IN
}

func appendName(b []byte, name string) ([]byte, error) {
	name = strings.TrimSuffix(name, ".")
	if len(name) > 253 {
		return nil, fmt.Errorf("DNS name of %d characters", len(name))
	}
	if name != "" {
		for _, label := range strings.Split(name, ".") {
			if label == "" || len(label) > 63 {
				return nil, fmt.Errorf("invalid DNS name %q", name)
			}
			b = append(b, byte(len(label)))
			b = append(b, label...)
		}
	}
	return append(b, 0), nil
}

var errShort = errors.New("DNS message too short")

// readName decodes the name at off, following compression pointers, and
// returns it with the offset after it.
func readName(msg []byte, off int) (string, int, error) {
	var labels []string
	end := -1
	for jumps := 0; ; {
		if off >= len(msg) {
			return "", 0, errShort
		}
		n := int(msg[off])
		switch {
		case n == 0:
			if end < 0 {
				end = off + 1
			}
			return strings.ToLower(strings.Join(labels, ".")), end, nil
		case n&0xc0 == 0xc0:
			if off+1 >= len(msg) {
				return "", 0, errShort
			}
			if jumps++; jumps > 32 {
				return "", 0, errors.New("DNS compression loop")
			}
			if end < 0 {
				end = off + 2
			}
			off = int(binary.BigEndian.Uint16(msg[off:]) & 0x3fff)
		case n > 63:
			return "", 0, fmt.Errorf("bad DNS label length %d", n)
		default:
			if off+1+n > len(msg) {
				return "", 0, errShort
			}
			labels = append(labels, string(msg[off+1:off+1+n]))
			off += 1 + n
		}
	}
}

// ParseQuery decodes the question of a query.
func ParseQuery(msg []byte) (Question, error) {
	if len(msg) < 12 {
		return Question{}, errShort
	}
	if msg[2]&0x80 != 0 || binary.BigEndian.Uint16(msg[4:]) != 1 {
		return Question{}, errors.New("not a query with one question")
	}
	name, off, err := readName(msg, 12)
	if err != nil {
		return Question{}, err
	}
	if off+4 > len(msg) {
		return Question{}, errShort
	}
	return Question{
		ID:   binary.BigEndian.Uint16(msg),
		Name: name,
		Type: binary.BigEndian.Uint16(msg[off:]),
		RD:   msg[2]&0x01 != 0,
	}, nil
}

// BuildReply encodes an authoritative answer to q.
func BuildReply(q Question, rcode int, answers []Answer) ([]byte, error) {
	b := binary.BigEndian.AppendUint16(nil, q.ID)
	flags := uint16(0x8400 | 0x0080 | rcode) // QR, AA, RA
	if q.RD {
		flags |= 0x0100
	}
	b = binary.BigEndian.AppendUint16(b, flags)
	b = append(b, 0, 1)
	b = binary.BigEndian.AppendUint16(b, uint16(len(answers)))
	b = append(b, 0, 0, 0, 0)
	b, err := appendName(b, q.Name)
	if err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint16(b, q.Type)
	b = binary.BigEndian.AppendUint16(b, 1)
	for _, a := range answers {
		var rdata []byte
		switch a.Type {
		case TypeA, TypeAAAA:
			ip, err := netip.ParseAddr(a.Value)
			if err != nil || ip.Is4() != (a.Type == TypeA) {
				return nil, fmt.Errorf("bad address %q for type %d", a.Value, a.Type)
			}
			rdata = ip.AsSlice()
		case TypeTXT:
			if len(a.Value) > 255 {
				return nil, fmt.Errorf("TXT string of %d bytes", len(a.Value))
			}
			rdata = append([]byte{byte(len(a.Value))}, a.Value...)
		default:
			return nil, fmt.Errorf("cannot encode type %d", a.Type)
		}
		b = append(b, 0xc0, 12) // the question's name
		b = binary.BigEndian.AppendUint16(b, a.Type)
		b = binary.BigEndian.AppendUint16(b, 1)
		b = binary.BigEndian.AppendUint32(b, a.TTL)
		b = binary.BigEndian.AppendUint16(b, uint16(len(rdata)))
		b = append(b, rdata...)
	}
	return b, nil
}

// ParseReply decodes a response: its code and answer section.
func ParseReply(msg []byte) (*Reply, error) {
	if len(msg) < 12 {
		return nil, errShort
	}
	if msg[2]&0x80 == 0 {
		return nil, errors.New("not a DNS response")
	}
	r := &Reply{ID: binary.BigEndian.Uint16(msg), Rcode: int(msg[3] & 0x0f)}
	qd, an := int(binary.BigEndian.Uint16(msg[4:])), int(binary.BigEndian.Uint16(msg[6:]))
	off := 12
	for range qd {
		_, next, err := readName(msg, off)
		if err != nil {
			return nil, err
		}
		off = next + 4
	}
	for range an {
		_, next, err := readName(msg, off)
		if err != nil {
			return nil, err
		}
		off = next
		if off+10 > len(msg) {
			return nil, errShort
		}
		a := Answer{Type: binary.BigEndian.Uint16(msg[off:]), TTL: binary.BigEndian.Uint32(msg[off+4:])}
		n := int(binary.BigEndian.Uint16(msg[off+8:]))
		off += 10
		if off+n > len(msg) {
			return nil, errShort
		}
		rdata := msg[off : off+n]
		off += n
		switch {
		case (a.Type == TypeA && n == 4) || (a.Type == TypeAAAA && n == 16):
			ip, _ := netip.AddrFromSlice(rdata)
			a.Value = ip.String()
		case a.Type == TypeTXT:
			var parts []string
			for len(rdata) > 0 && int(rdata[0]) < len(rdata) {
				parts = append(parts, string(rdata[1:1+rdata[0]]))
				rdata = rdata[1+rdata[0]:]
			}
			a.Value = strings.Join(parts, "")
		default:
			a.Value = fmt.Sprintf("%x", rdata)
		}
		r.Answers = append(r.Answers, a)
	}
	return r, nil
}
