package netlab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

// spoofer is a socket that the agent bound to another host's address and
// port (Local of a "spoof" request), answering the DNS queries that reach it.
type spoofer struct {
	pc     net.PacketConn
	server *server
	dns    *DNSServer
	done   chan struct{}
}

// spoof sends one small packet from Local to every port of Ports on the host
// Addr, over UDP (one datagram each from one socket) or TCP (one connection
// attempt each, from a new socket bound to Local). Data counts the outcomes
// by error number ("sent" for UDP datagrams that left, "connected" for TCP).
// A UDP socket stays open under ID and answers every DNS query that reaches
// it from Records, until "spoofed" collects what it saw.
func (a *agent) spoof(req Request) Response {
	first, last, err := portRange(req.Ports)
	if err != nil {
		return Response{Err: err.Error()}
	}
	host, err := netip.ParseAddr(req.Addr)
	if err != nil {
		return Response{Err: fmt.Sprintf("spoof: Addr must be an address without a port: %v", err)}
	}
	start := time.Now()
	if req.Net == "tcp" {
		return spoofTCP(req, host, first, last, start)
	}
	pc, err := net.ListenPacket(udpNet(req.Local), req.Local)
	if err != nil {
		return failed(fmt.Errorf("bind %s: %w", req.Local, err), time.Since(start))
	}
	outcomes := map[string]int{}
	var firstErr error
	for port := first; port <= last; port++ {
		if _, err := pc.WriteTo([]byte("netlab"), net.UDPAddrFromAddrPort(netip.AddrPortFrom(host, uint16(port)))); err != nil {
			firstErr = cmpOr(firstErr, err)
			outcomes[errnoOr(err)]++
			continue
		}
		outcomes["sent"]++
	}
	resp := spoofResponse(outcomes, "sent", firstErr, time.Since(start))
	if old := a.spoofs[req.ID]; old != nil {
		old.close()
	}
	s := &spoofer{pc: pc, server: newServer(), dns: &DNSServer{Records: req.Records}, done: make(chan struct{})}
	a.spoofs[req.ID] = s
	go s.serve()
	return resp
}

// spoofTCP makes one connection attempt from Local to each port.
func spoofTCP(req Request, host netip.Addr, first, last int, start time.Time) Response {
	d, err := dialer(req, "tcp")
	if err != nil {
		return Response{Err: err.Error()}
	}
	d.Timeout = 200 * time.Millisecond
	outcomes := map[string]int{}
	var firstErr error
	for port := first; port <= last; port++ {
		c, err := d.Dial("tcp", netip.AddrPortFrom(host, uint16(port)).String())
		if err != nil {
			firstErr = cmpOr(firstErr, err)
			outcomes[errnoOr(err)]++
			continue
		}
		c.Close()
		outcomes["connected"]++
	}
	return spoofResponse(outcomes, "connected", firstErr, time.Since(start))
}

// spoofResponse is OK when at least one packet left; Errno is that of the
// first failure.
func spoofResponse(outcomes map[string]int, success string, firstErr error, elapsed time.Duration) Response {
	keys := make([]string, 0, len(outcomes))
	for k := range outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, outcomes[k]))
	}
	resp := Response{OK: outcomes[success] > 0, Elapsed: elapsed, Data: strings.Join(parts, ", ")}
	if firstErr != nil {
		resp.Err, resp.Errno = firstErr.Error(), ErrnoName(firstErr)
	}
	return resp
}

func (s *spoofer) serve() {
	defer close(s.done)
	buf := make([]byte, 65536)
	for {
		n, from, err := s.pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. an ICMP error for one of the datagrams sent
		}
		if reply := s.server.query(s.dns, buf[:n], s.pc.LocalAddr(), from); reply != nil {
			_, _ = s.pc.WriteTo(reply, from)
		}
	}
}

// close stops the spoofer and returns the DNS queries it answered.
func (s *spoofer) close() []Event {
	s.pc.Close()
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

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// errnoOr names err's error number, or returns its text.
func errnoOr(err error) string {
	if name := ErrnoName(err); name != "" {
		return name
	}
	return err.Error()
}
