package netlab

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/dnswire"
)

// ServerConfig is what a server helper serves. Addresses are host:port; a
// wildcard host (0.0.0.0, [::]) serves every address of the namespace.
type ServerConfig struct {
	DNS  []DNSServer `json:"dns,omitempty"`
	TCP  []string    `json:"tcp,omitempty"`  // banner, echo and bulk (see Request)
	HTTP []string    `json:"http,omitempty"` // any GET: "hello http LOCAL-ADDRESS"
	UDP  []string    `json:"udp,omitempty"`  // echo
	TLS  []TLSServer `json:"tls,omitempty"`  // HTTPS with server-sent events (tls.go)
}

// DNSServer answers queries over UDP and TCP on each Listen address from
// Records. Over UDP, an answer larger than the sender takes (512 bytes, or
// its EDNS0 size) is truncated: the question alone, with TC set. The first record whose Name matches the query's name selects the
// answer: the values of the records with that Name and the query's type, or
// no answer (NOERROR) when there are none of that type. A name no record
// matches gets NXDOMAIN.
//
// With Forward, it answers nothing itself: like Docker's embedded DNS, it
// sends each query to Forward over the protocol it came by (a new TCP
// connection for each) and relays the answer as it is, truncated or not.
// With AcceptAfter, a TCP connection waits that long in the listen queue
// before the server accepts it, as in a busy dockerd: meanwhile the kernel
// acknowledges the query from a socket that no process holds yet.
type DNSServer struct {
	Listen      []string      `json:"listen"`
	Records     []Record      `json:"records"`
	Forward     string        `json:"forward,omitempty"`
	AcceptAfter time.Duration `json:"acceptAfter,omitempty"`
}

// Record is a set of answers of a fake DNS server.
type Record struct {
	Name   string   `json:"name"`   // the name and every name below it; "*" matches every name
	Type   string   `json:"type"`   // A, AAAA, TXT, CNAME (its first value; the target's answers follow it), or DNAME (below)
	Values []string `json:"values"` // the answers, or with Rotate one per query in turn
	Rotate bool     `json:"rotate,omitempty"`
	TTL    uint32   `json:"ttl"`
}

// A DNAME record (RFC 6672) of NAME maps the names below NAME (not NAME
// itself) to the same names below its first value: the answer for a name
// below it is the DNAME record, the CNAME it makes, and the target's
// answers.

func (r Record) matches(name string) bool {
	return r.Name == "*" || name == r.Name || strings.HasSuffix(name, "."+r.Name)
}

// Event is something a server saw: a DNS query, a TCP connection, an HTTP
// request or a UDP datagram.
type Event struct {
	Kind   string `json:"kind"`  // dns, tcp, http, udp, https
	Local  string `json:"local"` // the address that received it
	Remote string `json:"remote"`
	Name   string `json:"name,omitempty"` // dns: the name asked; http: the Host header
	Type   string `json:"type,omitempty"` // dns: the type asked
	Net    string `json:"net,omitempty"`  // dns: udp or tcp
	// https: the SNI, the path and the credential headers (tls.go).
	SNI     string            `json:"sni,omitempty"`
	Path    string            `json:"path,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

type server struct {
	mu      sync.Mutex
	events  []Event
	turns   map[*Record]int
	started bool
}

func newServer() *server { return &server{turns: map[*Record]int{}} }

func (s *server) record(e Event) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

func (s *server) handle(req Request) Response {
	switch req.Op {
	case "ping":
		return Response{OK: true}
	case "start":
		if s.started || req.Server == nil {
			return Response{Err: "start: already started, or no configuration"}
		}
		s.started = true
		if err := s.start(req.Server); err != nil {
			return Response{Err: err.Error()}
		}
		return Response{OK: true}
	case "events":
		s.mu.Lock()
		defer s.mu.Unlock()
		if req.Since > len(s.events) {
			req.Since = len(s.events)
		}
		return Response{OK: true, Events: append([]Event{}, s.events[req.Since:]...)}
	}
	return Response{Err: fmt.Sprintf("unknown op %q", req.Op)}
}

// start opens every listener before it returns.
func (s *server) start(c *ServerConfig) error {
	for i := range c.DNS {
		d := &c.DNS[i]
		for _, r := range d.Records {
			if _, err := ParseType(r.Type); err != nil {
				return err
			}
		}
		for _, addr := range d.Listen {
			pc, err := net.ListenPacket(udpNet(addr), addr)
			if err != nil {
				return err
			}
			go s.serveDNSUDP(pc, d)
			ln, err := net.Listen(tcpNet(addr), addr)
			if err != nil {
				return err
			}
			go s.serveDNSTCP(ln, d)
		}
	}
	for _, addr := range c.TCP {
		ln, err := net.Listen(tcpNet(addr), addr)
		if err != nil {
			return err
		}
		go accept(ln, s.serveTCP)
	}
	for _, addr := range c.HTTP {
		ln, err := net.Listen(tcpNet(addr), addr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
	}
	for _, addr := range c.UDP {
		pc, err := net.ListenPacket(udpNet(addr), addr)
		if err != nil {
			return err
		}
		go s.serveUDP(pc)
	}
	for _, t := range c.TLS {
		if err := s.startTLS(t); err != nil {
			return err
		}
	}
	return nil
}

// tcpNet and udpNet keep IPv4 and IPv6 wildcards apart: "tcp6" on [::]
// does not take IPv4 connections, so each event names its real address.
func tcpNet(addr string) string {
	if strings.HasPrefix(addr, "[") {
		return "tcp6"
	}
	return "tcp4"
}

func udpNet(addr string) string {
	if strings.HasPrefix(addr, "[") {
		return "udp6"
	}
	return "udp4"
}

func accept(ln net.Listener, serve func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go serve(c)
	}
}

// answer returns the response to a query.
func (s *server) answer(d *DNSServer, q Question) ([]byte, error) {
	answers, found := s.lookup(d, q.Name, q.Type, 8)
	if !found {
		return BuildReply(q, RcodeNXDomain, nil)
	}
	return BuildReply(q, RcodeSuccess, answers)
}

// lookup returns the answers for name of type t, as a recursive resolver
// gives them: a CNAME record of the name, then the target's answers (up to
// depth links of a chain). found is false when no record matches the name.
func (s *server) lookup(d *DNSServer, name string, t uint16, depth int) (answers []Answer, found bool) {
	var first *Record
	for i := range d.Records {
		r := &d.Records[i]
		if first == nil && r.matches(name) {
			first = r
		}
		if first == nil || r.Name != first.Name {
			continue
		}
		rt, _ := ParseType(r.Type)
		if rt == TypeDNAME && name != r.Name && len(r.Values) > 0 && depth > 0 {
			target := strings.TrimSuffix(name, r.Name) + r.Values[0]
			more, _ := s.lookup(d, target, t, depth-1)
			return append([]Answer{{Name: r.Name, Type: TypeDNAME, TTL: r.TTL, Value: r.Values[0]},
				{Name: name, Type: TypeCNAME, TTL: r.TTL, Value: target}}, more...), true
		}
		if rt == TypeCNAME && t != TypeCNAME && len(r.Values) > 0 && depth > 0 {
			more, _ := s.lookup(d, r.Values[0], t, depth-1)
			return append([]Answer{{Name: name, Type: TypeCNAME, TTL: r.TTL, Value: r.Values[0]}}, more...), true
		}
		if rt != t || len(r.Values) == 0 {
			continue
		}
		values := r.Values
		if r.Rotate {
			s.mu.Lock()
			n := s.turns[r]
			s.turns[r] = n + 1
			s.mu.Unlock()
			values = values[n%len(values) : n%len(values)+1]
		}
		for _, v := range values {
			answers = append(answers, Answer{Name: name, Type: t, TTL: r.TTL, Value: v})
		}
	}
	return answers, first != nil
}

// query answers msg. Over UDP (udp), a reply larger than the sender takes
// is truncated, which sends it to TCP.
func (s *server) query(d *DNSServer, msg []byte, local, remote net.Addr, udp bool) []byte {
	q, err := ParseQuery(msg)
	if err != nil {
		return nil
	}
	s.record(Event{Kind: "dns", Local: local.String(), Remote: remote.String(), Name: q.Name, Type: typeName(q.Type), Net: local.Network()})
	if d.Forward != "" {
		reply, err := forward(d.Forward, msg, udp)
		if err != nil {
			reply, _ = BuildReply(q, RcodeServFail, nil)
		}
		return reply
	}
	reply, err := s.answer(d, q)
	if err == nil && udp {
		reply, err = dnswire.ForUDP(q, reply)
	}
	if err != nil {
		reply, _ = BuildReply(q, RcodeServFail, nil)
	}
	return reply
}

func typeName(t uint16) string { return dnswire.TypeName(t) }

// forward sends msg to the DNS server at addr, over UDP or TCP, and returns
// its answer.
func forward(addr string, msg []byte, udp bool) ([]byte, error) {
	network := "tcp"
	if udp {
		network = "udp"
	}
	c, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if udp {
		if _, err := c.Write(msg); err != nil {
			return nil, err
		}
		buf := make([]byte, 65536)
		n, err := c.Read(buf)
		return buf[:n], err
	}
	if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(msg))), msg...)); err != nil {
		return nil, err
	}
	var n uint16
	if err := binary.Read(c, binary.BigEndian, &n); err != nil {
		return nil, err
	}
	reply := make([]byte, n)
	_, err = io.ReadFull(c, reply)
	return reply, err
}

func (s *server) serveDNSUDP(pc net.PacketConn, d *DNSServer) {
	buf := make([]byte, 65536)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if reply := s.query(d, buf[:n], pc.LocalAddr(), from, true); reply != nil {
			_, _ = pc.WriteTo(reply, from)
		}
	}
}

func (s *server) serveDNSTCP(ln net.Listener, d *DNSServer) {
	if d.AcceptAfter <= 0 {
		accept(ln, s.dnsTCPConn(d))
		return
	}
	serve := s.dnsTCPConn(d)
	for {
		time.Sleep(d.AcceptAfter) // a connection that came meanwhile waits in the queue
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go serve(c)
	}
}

// dnsTCPConn returns the function that answers the queries of one TCP
// connection.
func (s *server) dnsTCPConn(d *DNSServer) func(net.Conn) {
	return func(c net.Conn) {
		defer c.Close()
		for {
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			var n uint16
			if err := binary.Read(c, binary.BigEndian, &n); err != nil {
				return
			}
			msg := make([]byte, n)
			if _, err := io.ReadFull(c, msg); err != nil {
				return
			}
			reply := s.query(d, msg, c.LocalAddr(), c.RemoteAddr(), false)
			if reply == nil {
				return
			}
			if _, err := c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(reply)))); err != nil {
				return
			}
			if _, err := c.Write(reply); err != nil {
				return
			}
		}
	}
}

// zeros is what bulk transfers send.
var zeros = make([]byte, 1<<20)

// serveTCP greets with "hello LOCAL-ADDRESS", then answers "echo TEXT" with
// TEXT and "bulk N" with N bytes and the end of the connection. A line that
// starts with a TLS handshake record's header is skipped.
func (s *server) serveTCP(c net.Conn) {
	defer c.Close()
	s.record(Event{Kind: "tcp", Local: c.LocalAddr().String(), Remote: c.RemoteAddr().String()})
	if _, err := fmt.Fprintf(c, "hello %s\n", c.LocalAddr()); err != nil {
		return
	}
	r := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if strings.HasPrefix(line, "\x16\x03") {
			continue // a TLS record, as a gateway test sends first: skipped
		}
		cmd, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch cmd {
		case "echo":
			if _, err := fmt.Fprintf(c, "%s\n", arg); err != nil {
				return
			}
		case "bulk":
			n, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				return
			}
			for n > 0 {
				chunk := zeros[:min(n, int64(len(zeros)))]
				if _, err := c.Write(chunk); err != nil {
					return
				}
				n -= int64(len(chunk))
			}
			return
		default:
			return
		}
	}
}

func (s *server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	local := "?"
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		local = a.String()
	}
	s.record(Event{Kind: "http", Local: local, Remote: r.RemoteAddr, Name: r.Host})
	fmt.Fprintf(w, "hello http %s\n", local)
}

func (s *server) serveUDP(pc net.PacketConn) {
	buf := make([]byte, 65536)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		s.record(Event{Kind: "udp", Local: pc.LocalAddr().String(), Remote: from.String()})
		_, _ = pc.WriteTo(buf[:n], from)
	}
}
