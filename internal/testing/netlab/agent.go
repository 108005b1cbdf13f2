package netlab

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// agent makes the attempts a test asks for, as whatever uid it runs as.
type agent struct {
	conns  map[string]*heldConn
	spoofs map[string]*spoofer
}

type heldConn struct {
	c net.Conn
	r *bufio.Reader
}

func newAgent() *agent {
	return &agent{conns: map[string]*heldConn{}, spoofs: map[string]*spoofer{}}
}

const defaultTimeout = 2 * time.Second

func (a *agent) handle(req Request) Response {
	if req.Timeout <= 0 {
		req.Timeout = defaultTimeout
	}
	switch req.Op {
	case "ping":
		return Response{OK: true, Data: fmt.Sprintf("uid %d", os.Getuid())}
	case "dns":
		return dnsQuery(req)
	case "dial":
		return a.dial(req, false)
	case "open":
		return a.dial(req, true)
	case "echo":
		return a.echo(req)
	case "close":
		if h := a.conns[req.ID]; h != nil {
			h.c.Close()
			delete(a.conns, req.ID)
		}
		return Response{OK: true}
	case "http":
		return httpGet(req)
	case "udp":
		return udpSend(req)
	case "icmp":
		return icmpEcho(req)
	case "raw":
		return rawSocket(req)
	case "exec":
		return execute(req)
	case "bulk":
		return bulk(req)
	case "flood":
		return flood(req)
	case "dnsbench":
		return dnsBench(req)
	case "dnspipe":
		return dnsPipe(req)
	case "spoof":
		return a.spoof(req)
	case "spoofed":
		return a.spoofed(req)
	case "send":
		return send(req)
	}
	return Response{Err: fmt.Sprintf("unknown op %q", req.Op)}
}

// failed reports err with its error number.
func failed(err error, elapsed time.Duration) Response {
	return Response{Err: err.Error(), Errno: ErrnoName(err), Elapsed: elapsed}
}

var errnoNames = map[syscall.Errno]string{
	syscall.EPERM:           "EPERM",
	syscall.EACCES:          "EACCES",
	syscall.ECONNREFUSED:    "ECONNREFUSED",
	syscall.ECONNRESET:      "ECONNRESET",
	syscall.EHOSTUNREACH:    "EHOSTUNREACH",
	syscall.ENETUNREACH:     "ENETUNREACH",
	syscall.ETIMEDOUT:       "ETIMEDOUT",
	syscall.EAGAIN:          "EAGAIN",
	syscall.EADDRNOTAVAIL:   "EADDRNOTAVAIL",
	syscall.EAFNOSUPPORT:    "EAFNOSUPPORT",
	syscall.EPROTONOSUPPORT: "EPROTONOSUPPORT",
	syscall.EINVAL:          "EINVAL",
	syscall.EPIPE:           "EPIPE",
	syscall.EADDRINUSE:      "EADDRINUSE",
}

// ErrnoName names the error number inside err, "timeout" for a deadline,
// "EOF" for an end of stream, or "".
func ErrnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name, ok := errnoNames[errno]; ok {
			return name
		}
		return fmt.Sprintf("errno %d", int(errno))
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return "timeout"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "EOF"
	}
	return ""
}

// exchange sends one query over UDP or TCP and returns the reply.
func exchange(conn net.Conn, network string, q []byte, id uint16) (*Reply, error) {
	if network == "tcp" {
		if _, err := conn.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(q))), q...)); err != nil {
			return nil, err
		}
		var n uint16
		if err := binary.Read(conn, binary.BigEndian, &n); err != nil {
			return nil, err
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(conn, msg); err != nil {
			return nil, err
		}
		return ParseReply(msg)
	}
	if _, err := conn.Write(q); err != nil {
		return nil, err
	}
	buf := make([]byte, 65536)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return nil, err
		}
		if r, err := ParseReply(buf[:n]); err == nil && r.ID == id {
			return r, nil
		}
	}
}

// dialer returns a dialer that binds req.Local and sets req.Routing, if
// any.
func dialer(req Request, network string) (*net.Dialer, error) {
	d := &net.Dialer{Timeout: req.Timeout}
	var err error
	if req.Routing != nil {
		if d.Control, err = setRouting(req.Routing); err != nil {
			return nil, err
		}
	}
	if req.Local == "" {
		return d, nil
	}
	if strings.HasPrefix(network, "udp") {
		d.LocalAddr, err = net.ResolveUDPAddr(network, req.Local)
	} else {
		d.LocalAddr, err = net.ResolveTCPAddr(network, req.Local)
	}
	return d, err
}

// dnsQuery asks Addr for Name, trying again after a timeout up to Retries
// times, each try from a new socket, as stub resolvers do.
func dnsQuery(req Request) Response {
	t, err := ParseType(req.Type)
	if err != nil {
		return Response{Err: err.Error()}
	}
	network := req.Net
	if network == "" {
		network = "udp"
	}
	for try := 1; ; try++ {
		resp := dnsOnce(req, network, t)
		resp.Tries = try
		if resp.Errno != "timeout" || try > req.Retries {
			return resp
		}
	}
}

func dnsOnce(req Request, network string, t uint16) Response {
	id := uint16(rand.N(1 << 16))
	q, err := BuildQuery(id, req.Name, t)
	if err != nil {
		return Response{Err: err.Error()}
	}
	d, err := dialer(req, network)
	if err != nil {
		return Response{Err: err.Error()}
	}
	start := time.Now()
	conn, err := d.Dial(network, req.Addr)
	if err != nil {
		return failed(err, time.Since(start))
	}
	defer conn.Close()
	_ = conn.SetDeadline(start.Add(req.Timeout))
	r, err := exchange(conn, network, q, id)
	if err != nil {
		return failed(err, time.Since(start))
	}
	resp := Response{OK: true, Elapsed: time.Since(start), Rcode: RcodeName(r.Rcode), TC: r.Truncated}
	for _, a := range r.Answers {
		resp.Answers = append(resp.Answers, a.Value)
	}
	return resp
}

func (a *agent) dial(req Request, keep bool) Response {
	d, err := dialer(req, "tcp")
	if err != nil {
		return Response{Err: err.Error()}
	}
	start := time.Now()
	c, err := d.Dial("tcp", req.Addr)
	elapsed := time.Since(start)
	if err != nil {
		return failed(err, elapsed)
	}
	for _, chunk := range req.Chunks { // e.g. a ClientHello for a gateway
		if _, err := c.Write(chunk); err != nil {
			c.Close()
			return failed(err, elapsed)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(req.Timeout))
	r := bufio.NewReader(c)
	banner, err := r.ReadString('\n')
	if err != nil {
		c.Close()
		return failed(fmt.Errorf("connected, but reading the banner: %w", err), elapsed)
	}
	if keep {
		if old := a.conns[req.ID]; old != nil {
			old.c.Close()
		}
		a.conns[req.ID] = &heldConn{c: c, r: r}
	} else {
		c.Close()
	}
	return Response{OK: true, Elapsed: elapsed, Data: strings.TrimSpace(banner)}
}

func (a *agent) echo(req Request) Response {
	h := a.conns[req.ID]
	if h == nil {
		return Response{Err: fmt.Sprintf("no connection %q", req.ID)}
	}
	start := time.Now()
	_ = h.c.SetDeadline(start.Add(req.Timeout))
	if _, err := fmt.Fprintf(h.c, "echo %s\n", req.Line); err != nil {
		return failed(err, time.Since(start))
	}
	line, err := h.r.ReadString('\n')
	if err != nil {
		return failed(err, time.Since(start))
	}
	return Response{OK: true, Elapsed: time.Since(start), Data: strings.TrimSpace(line)}
}

// httpGet fetches URL as a program would, resolving names through the DNS
// server at Resolver.
func httpGet(req Request) Response {
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, req.Resolver)
	}}
	dialer := &net.Dialer{Resolver: resolver, Timeout: req.Timeout}
	client := &http.Client{
		Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true},
		Timeout:   req.Timeout,
	}
	start := time.Now()
	resp, err := client.Get(req.URL)
	if err != nil {
		return failed(err, time.Since(start))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return failed(err, time.Since(start))
	}
	return Response{OK: resp.StatusCode == http.StatusOK, Elapsed: time.Since(start), Status: resp.StatusCode, Data: strings.TrimSpace(string(body))}
}

// udpSend sends Line (or "netlab") to Addr and waits for an answer.
func udpSend(req Request) Response {
	d, err := dialer(req, "udp")
	if err != nil {
		return Response{Err: err.Error()}
	}
	start := time.Now()
	conn, err := d.Dial("udp", req.Addr)
	if err != nil {
		return failed(err, time.Since(start))
	}
	defer conn.Close()
	payload := req.Line
	if payload == "" {
		payload = "netlab"
	}
	if _, err := conn.Write([]byte(payload)); err != nil {
		return failed(fmt.Errorf("send: %w", err), time.Since(start))
	}
	_ = conn.SetReadDeadline(start.Add(req.Timeout))
	buf := make([]byte, 65536)
	n, err := conn.Read(buf)
	if err != nil {
		return failed(fmt.Errorf("receive: %w", err), time.Since(start))
	}
	return Response{OK: true, Elapsed: time.Since(start), Data: string(buf[:n])}
}

// icmpEcho sends an ICMP echo request to Addr through an unprivileged ICMP
// datagram socket (which net.ipv4.ping_group_range must allow) and waits for
// the reply.
func icmpEcho(req Request) Response {
	ip, err := netip.ParseAddr(req.Addr)
	if err != nil {
		return Response{Err: err.Error()}
	}
	family, proto, typ := syscall.AF_INET, syscall.IPPROTO_ICMP, byte(8)
	if ip.Is6() {
		family, proto, typ = syscall.AF_INET6, syscall.IPPROTO_ICMPV6, 128
	}
	start := time.Now()
	fd, err := syscall.Socket(family, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, proto)
	if err != nil {
		return failed(fmt.Errorf("socket: %w", err), time.Since(start))
	}
	defer syscall.Close(fd)
	var sa syscall.Sockaddr
	if ip.Is4() {
		sa = &syscall.SockaddrInet4{Addr: ip.As4()}
	} else {
		sa = &syscall.SockaddrInet6{Addr: ip.As16()}
	}
	// Type, code, checksum and identifier are the kernel's to fill in.
	msg := []byte{typ, 0, 0, 0, 0, 0, 0, 1, 'n', 'e', 't', 'l', 'a', 'b'}
	if err := syscall.Sendto(fd, msg, 0, sa); err != nil {
		return failed(fmt.Errorf("sendto: %w", err), time.Since(start))
	}
	tv := syscall.NsecToTimeval(req.Timeout.Nanoseconds())
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return failed(err, time.Since(start))
	}
	buf := make([]byte, 1500)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		if errors.Is(err, syscall.EAGAIN) {
			err = fmt.Errorf("no reply: %w", os.ErrDeadlineExceeded)
		}
		return failed(fmt.Errorf("recvfrom: %w", err), time.Since(start))
	}
	return Response{OK: true, Elapsed: time.Since(start), Data: fmt.Sprintf("reply of %d bytes", n)}
}

// rawSocket opens a raw socket of family Name: inet, inet6 or packet.
func rawSocket(req Request) Response {
	var family, proto int
	switch req.Name {
	case "inet":
		family, proto = syscall.AF_INET, syscall.IPPROTO_RAW
	case "inet6":
		family, proto = syscall.AF_INET6, syscall.IPPROTO_RAW
	case "packet":
		family, proto = syscall.AF_PACKET, 0x0300 // htons(ETH_P_ALL)
	default:
		return Response{Err: fmt.Sprintf("unknown family %q", req.Name)}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, proto)
	if err != nil {
		return failed(fmt.Errorf("socket: %w", err), 0)
	}
	syscall.Close(fd)
	return Response{OK: true}
}

func execute(req Request) Response {
	if len(req.Argv) == 0 {
		return Response{Err: "exec: no command"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), req.Timeout)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...).CombinedOutput()
	resp := Response{OK: err == nil, Elapsed: time.Since(start), Data: string(out)}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		resp.Exit = exit.ExitCode()
		resp.Err = err.Error()
	case err != nil:
		resp.Exit = -1
		resp.Err = err.Error()
	}
	return resp
}

// bulk receives Bytes from the TCP server at Addr; Samples holds the time
// from the request to the last byte.
func bulk(req Request) Response {
	c, err := net.DialTimeout("tcp", req.Addr, req.Timeout)
	if err != nil {
		return failed(err, 0)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(req.Timeout))
	for _, chunk := range req.Chunks { // e.g. a ClientHello for a gateway
		if _, err := c.Write(chunk); err != nil {
			return failed(err, 0)
		}
	}
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil {
		return failed(err, 0)
	}
	start := time.Now()
	if _, err := fmt.Fprintf(c, "bulk %d\n", req.Bytes); err != nil {
		return failed(err, 0)
	}
	buf := make([]byte, 256<<10)
	var got int64
	for {
		n, err := r.Read(buf)
		got += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return failed(err, time.Since(start))
		}
	}
	elapsed := time.Since(start)
	if got != req.Bytes {
		return Response{Err: fmt.Sprintf("received %d bytes of %d", got, req.Bytes)}
	}
	return Response{OK: true, Elapsed: elapsed, Samples: []time.Duration{elapsed}}
}

// dnsBench sends Count queries, one after another, and returns the time of
// each. Every answer must be NOERROR with an address. A query that times out
// counts as lost and is asked again, up to Retries times.
func dnsBench(req Request) Response {
	t, err := ParseType(req.Type)
	if err != nil {
		return Response{Err: err.Error()}
	}
	network := req.Net
	if network == "" {
		network = "udp"
	}
	d, err := dialer(req, network)
	if err != nil {
		return Response{Err: err.Error()}
	}
	var conn net.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	resp := Response{OK: true}
	for i := range req.Count {
		name := strings.ReplaceAll(req.Name, "%d", fmt.Sprint(i))
		for try := 0; ; try++ {
			if conn == nil || req.NewSocket || try > 0 {
				if conn != nil {
					conn.Close()
				}
				if conn, err = d.Dial(network, req.Addr); err != nil {
					return failed(err, 0)
				}
			}
			id := uint16(rand.N(1 << 16))
			q, err := BuildQuery(id, name, t)
			if err != nil {
				return Response{Err: err.Error()}
			}
			start := time.Now()
			_ = conn.SetDeadline(start.Add(req.Timeout))
			r, err := exchange(conn, network, q, id)
			elapsed := time.Since(start)
			if ErrnoName(err) == "timeout" && try < req.Retries {
				resp.Lost++
				continue
			}
			if err != nil {
				r := failed(fmt.Errorf("query %d (%s), try %d: %w", i, name, try+1, err), elapsed)
				r.Lost, r.Samples = resp.Lost, resp.Samples
				return r
			}
			if r.Rcode != RcodeSuccess || len(r.Answers) == 0 {
				return Response{Err: fmt.Sprintf("query %d (%s): %s with %d answers", i, name, RcodeName(r.Rcode), len(r.Answers))}
			}
			resp.Samples = append(resp.Samples, elapsed)
			break
		}
	}
	return resp
}

// dnsPipe writes every query of req.Queries on one TCP connection to Addr
// before it reads any answer, then reads answers until each query has one
// (a server may answer out of order) or the connection ends or times out.
// OK means every query got an answer, whatever its code.
func dnsPipe(req Request) Response {
	d, err := dialer(req, "tcp")
	if err != nil {
		return Response{Err: err.Error()}
	}
	start := time.Now()
	conn, err := d.Dial("tcp", req.Addr)
	if err != nil {
		return failed(err, time.Since(start))
	}
	defer conn.Close()
	_ = conn.SetDeadline(start.Add(req.Timeout))
	var out []byte
	ids := map[uint16]int{} // query ID -> index
	base := uint16(rand.N(1 << 16))
	for i, q := range req.Queries {
		t, err := ParseType(q.Type)
		if err != nil {
			return Response{Err: err.Error()}
		}
		id := base + uint16(i)
		msg, err := BuildQuery(id, q.Name, t)
		if err != nil {
			return Response{Err: err.Error()}
		}
		ids[id] = i
		out = append(binary.BigEndian.AppendUint16(out, uint16(len(msg))), msg...)
	}
	if _, err := conn.Write(out); err != nil {
		return failed(err, time.Since(start))
	}
	resp := Response{Replies: make([]DNSReply, len(req.Queries))}
	for i := range resp.Replies {
		resp.Replies[i].Err = "no answer"
	}
	for left := len(ids); left > 0; left-- {
		var n uint16
		if err := binary.Read(conn, binary.BigEndian, &n); err != nil {
			r := failed(fmt.Errorf("%d of %d queries answered: %w", len(req.Queries)-left, len(req.Queries), err), time.Since(start))
			r.Replies = resp.Replies
			return r
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(conn, msg); err != nil {
			r := failed(err, time.Since(start))
			r.Replies = resp.Replies
			return r
		}
		r, err := ParseReply(msg)
		if err != nil {
			return Response{Err: err.Error(), Replies: resp.Replies}
		}
		i, ok := ids[r.ID]
		if !ok {
			return Response{Err: fmt.Sprintf("an answer with ID %d, which no query had (or a second one)", r.ID), Replies: resp.Replies}
		}
		delete(ids, r.ID)
		reply := DNSReply{Rcode: RcodeName(r.Rcode), Truncated: r.Truncated}
		for _, a := range r.Answers {
			reply.Answers = append(reply.Answers, a.Value)
		}
		resp.Replies[i] = reply
	}
	resp.OK, resp.Elapsed = true, time.Since(start)
	return resp
}
