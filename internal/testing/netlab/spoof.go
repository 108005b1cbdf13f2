package netlab

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

// spoofer is a socket that the agent bound to another host's address and
// port (Local of a "spoof" request), answering the DNS queries that reach it
// until "spoofed" collects them.
type spoofer struct {
	sock   io.Closer
	server *server
	done   chan struct{}
}

// spoof sends one packet from Local to every port of Ports on the host Addr,
// then keeps a socket on Local under ID that answers DNS queries from
// Records. Over UDP the packets are small datagrams from that socket; over
// TCP each is a SYN left unanswered (see quietSYN), after which a listener
// takes Local. Data counts the outcomes by error number.
func (a *agent) spoof(req Request) Response {
	first, last, err := portRange(req.Ports)
	if err != nil {
		return Response{Err: err.Error()}
	}
	host, err := netip.ParseAddr(req.Addr)
	if err != nil {
		return Response{Err: fmt.Sprintf("spoof: Addr must be an address without a port: %v", err)}
	}
	local, err := netip.ParseAddrPort(req.Local)
	if err != nil {
		return Response{Err: fmt.Sprintf("spoof: Local: %v", err)}
	}
	start := time.Now()
	s := &spoofer{server: newServer(), done: make(chan struct{})}
	dns := &DNSServer{Records: req.Records}
	var resp Response
	if req.Net == "tcp" {
		resp = spoofTCP(local, host, first, last)
		var ln net.Listener
		if ln, err = net.Listen(tcpNet(req.Local), req.Local); err == nil {
			s.sock = ln
			go func() { accept(ln, s.server.dnsTCPConn(dns)); close(s.done) }()
		}
	} else {
		var pc net.PacketConn
		if pc, err = net.ListenPacket(udpNet(req.Local), req.Local); err == nil {
			resp = spoofUDP(pc, host, first, last)
			s.sock = pc
			go func() { s.server.serveDNSUDP(pc, dns); close(s.done) }()
		}
	}
	if err != nil {
		return failed(fmt.Errorf("bind %s: %w", req.Local, err), time.Since(start))
	}
	if old := a.spoofs[req.ID]; old != nil {
		old.close()
	}
	a.spoofs[req.ID] = s
	resp.Elapsed = time.Since(start)
	return resp
}

// spoofUDP sends a datagram from pc to each port.
func spoofUDP(pc net.PacketConn, host netip.Addr, first, last int) Response {
	var o outcomes
	for port := first; port <= last; port++ {
		_, err := pc.WriteTo([]byte("netlab"), net.UDPAddrFromAddrPort(netip.AddrPortFrom(host, uint16(port))))
		o.add("sent", err)
	}
	return o.response("sent")
}

// spoofTCP leaves an unanswered SYN from local to each port.
func spoofTCP(local netip.AddrPort, host netip.Addr, first, last int) Response {
	var o outcomes
	for port := first; port <= last; port++ {
		o.add("syn-sent", quietSYN(local, netip.AddrPortFrom(host, uint16(port))))
	}
	return o.response("syn-sent")
}

// outcomes counts attempts by error number and keeps the first error.
type outcomes struct {
	n     map[string]int
	first error
}

func (o *outcomes) add(success string, err error) {
	if o.n == nil {
		o.n = map[string]int{}
	}
	if err == nil {
		o.n[success]++
		return
	}
	if o.first == nil {
		o.first = err
	}
	name := ErrnoName(err)
	if name == "" {
		name = err.Error()
	}
	o.n[name]++
}

// response is OK when at least one attempt succeeded; Errno is that of the
// first failure.
func (o *outcomes) response(success string) Response {
	keys := make([]string, 0, len(o.n))
	for k := range o.n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, o.n[k]))
	}
	resp := Response{OK: o.n[success] > 0, Data: strings.Join(parts, ", ")}
	if o.first != nil {
		resp.Err, resp.Errno = o.first.Error(), ErrnoName(o.first)
	}
	return resp
}

// close stops the spoofer and returns the DNS queries it answered.
func (s *spoofer) close() []Event {
	s.sock.Close()
	<-s.done
	s.server.mu.Lock()
	defer s.server.mu.Unlock()
	return append([]Event{}, s.server.events...)
}

// spoofed closes the spoofer ID and returns the queries it answered.
func (a *agent) spoofed(req Request) Response {
	s := a.spoofs[req.ID]
	if s == nil {
		return Response{Err: fmt.Sprintf("no spoofer %q", req.ID)}
	}
	delete(a.spoofs, req.ID)
	return Response{OK: true, Events: s.close()}
}

// portRange parses "FIRST-LAST" or "PORT".
func portRange(s string) (int, int, error) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		b = a
	}
	first, err1 := strconv.Atoi(a)
	last, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || first < 1 || last > 65535 || first > last {
		return 0, 0, fmt.Errorf("bad port range %q", s)
	}
	return first, last, nil
}
