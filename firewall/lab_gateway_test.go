package firewall_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/connlog"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// clientHello returns a TLS 1.3-style ClientHello record naming sni (none
// when empty), with an encrypted_client_hello extension (type 0xfe0d, an
// opaque payload) when ech is set: what HAProxy reads of a real one.
func clientHello(sni string, ech bool) []byte {
	var ext []byte
	if sni != "" {
		name := append([]byte{0}, binary.BigEndian.AppendUint16(nil, uint16(len(sni)))...)
		name = append(name, sni...)
		list := append(binary.BigEndian.AppendUint16(nil, uint16(len(name))), name...)
		ext = binary.BigEndian.AppendUint16(ext, 0x0000)
		ext = binary.BigEndian.AppendUint16(ext, uint16(len(list)))
		ext = append(ext, list...)
	}
	// supported_versions: TLS 1.3.
	ext = append(ext, 0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04)
	if ech {
		payload := make([]byte, 200) // outer type, cipher suite, config id, enc, payload: opaque here
		ext = binary.BigEndian.AppendUint16(ext, 0xfe0d)
		ext = binary.BigEndian.AppendUint16(ext, uint16(len(payload)))
		ext = append(ext, payload...)
	}
	body := []byte{0x03, 0x03}               // legacy_version
	body = append(body, make([]byte, 32)...) // random
	body = append(body, 0)                   // session id
	body = append(body, 0x00, 0x02, 0x13, 0x01)
	body = append(body, 0x01, 0x00) // compression: null
	body = binary.BigEndian.AppendUint16(body, uint16(len(ext)))
	body = append(body, ext...)
	hs := []byte{0x01, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}
	hs = append(hs, body...)
	rec := []byte{0x16, 0x03, 0x01}
	rec = binary.BigEndian.AppendUint16(rec, uint16(len(hs)))
	return append(rec, hs...)
}

// httpHead is a plain HTTP/1.1 request for host.
func httpHead(host string) []byte {
	return []byte("GET / HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
}

// helloLine is a ClientHello naming sni and a newline, which the lab's
// servers read as a line and skip: for connections held open ("open").
func helloLine(sni string) []byte {
	h := append(clientHello(sni, false), '\n')
	if bytes.Count(h, []byte("\n")) != 1 {
		panic("the ClientHello of " + sni + " holds a newline")
	}
	return h
}

// send writes chunks to host:port as the agent and returns the response.
func (l *lab) send(host string, port int, pause, timeout time.Duration, until string, chunks ...[]byte) netlab.Response {
	l.t.Helper()
	return l.do(netlab.Request{Op: "send", Addr: addr(host, port), Chunks: chunks, Pause: pause, Timeout: timeout, Line: until})
}

// reaches checks that chunks sent to host:port come to the server at want,
// or at one of the addresses want separates with "|" (its greeting names
// the address that received the connection).
func (l *lab) reaches(what, host string, port int, want string, chunks ...[]byte) {
	l.t.Helper()
	r := l.send(host, port, 0, 2*time.Second, "\n", chunks...)
	for _, w := range strings.Split(want, "|") {
		if r.OK && strings.HasPrefix(r.Data, "hello "+w+"\n") {
			return
		}
	}
	l.t.Errorf("%s to %s: %v, want the greeting of %s", what, addr(host, port), r, want)
}

// stopped checks that chunks sent to host:port come nowhere: the gateway
// closes the connection (or the firewall refuses it) without a byte of a
// server's.
func (l *lab) stopped(what, host string, port int, chunks ...[]byte) {
	l.t.Helper()
	r := l.send(host, port, 0, 2*time.Second, "\n", chunks...)
	if r.OK || r.Data != "" || r.Errno == "timeout" {
		l.t.Errorf("%s to %s: %v, want the connection closed with nothing read", what, addr(host, port), r)
	}
}

// TestLabGateway: with the gateway, a TLS connection on a port of allowed
// names to an address of an allowed name reaches an address of the name in
// its ClientHello, and only when that name is allowed on that port; plain
// HTTP likewise by Host; the address the agent dialled does not decide
// where it goes, and one that no allowed name gave is refused at once.
func TestLabGateway(t *testing.T) {
	l := newGatewayLab(t)
	// The agent has resolved allowed.test: under the address-based
	// firewall, its address is open on 443 and 80 from now on.
	l.resolve("allowed.test", "A")
	l.resolve("allowed.test", "AAAA")

	t.Run("AllowedName", func(t *testing.T) {
		l := l.on(t)
		l.reaches("SNI allowed.test", allowedV4, 443, addr(allowedV4, 443), clientHello("allowed.test", false))
		l.reaches("SNI allowed.test over IPv6", allowedV6, 443, addr(allowedV6, 443), clientHello("allowed.test", false))
		l.resolve("deep.sub.wild.test", "A")
		l.reaches("SNI a name below *.wild.test", wildV4, 443, addr(wildV4, 443), clientHello("deep.sub.wild.test", false))
	})
	t.Run("OtherNameOnAllowedAddress", func(t *testing.T) {
		l := l.on(t)
		l.stopped("SNI cohost.test", allowedV4, 443, clientHello("cohost.test", false))
		l.stopped("SNI cohost.test over IPv6", allowedV6, 443, clientHello("cohost.test", false))
		l.stopped("SNI evilallowed.test", allowedV4, 443, clientHello("evilallowed.test", false))
		l.stopped("SNI allowed.test.evil", allowedV4, 443, clientHello("allowed.test.evil", false))
	})
	t.Run("DialledAddressDoesNotDecide", func(t *testing.T) {
		l := l.on(t)
		// At the address of another allowed name: where the name leads.
		l.resolve("x.wild.test", "A")
		l.resolve("x.wild.test", "AAAA")
		l.reaches("SNI allowed.test", wildV4, 443, addr(allowedV4, 443), clientHello("allowed.test", false))
		l.reaches("SNI allowed.test over IPv6", "2001:2::20", 443, addr(allowedV6, 443), clientHello("allowed.test", false))
		// At an address that no allowed name gave: the filter refuses it.
		l.refuses(unlistedV4, 443)
		l.refuses(unlistedV6, 443)
	})
	t.Run("NoSNI", func(t *testing.T) {
		l.on(t).stopped("a ClientHello without SNI", allowedV4, 443, clientHello("", false))
	})
	t.Run("NameOfAnotherPort", func(t *testing.T) {
		// wild.test is allowed on 443 only; allowed.test on 443 and 80.
		l.on(t).stopped("Host x.wild.test on port 80", allowedV4, 80, httpHead("x.wild.test"))
	})
	t.Run("SplitClientHello", func(t *testing.T) {
		l := l.on(t)
		hello := clientHello("allowed.test", false)
		r := l.send(wildV4, 443, 30*time.Millisecond, 2*time.Second, "\n", hello[:3], hello[3:40], hello[40:])
		if want := "hello " + addr(allowedV4, 443); !r.OK || !strings.HasPrefix(r.Data, want) {
			t.Errorf("a ClientHello in three segments: %v, want %q", r, want)
		}
	})
	t.Run("SlowClientHello", func(t *testing.T) {
		l := l.on(t)
		hello := clientHello("allowed.test", false)
		start := time.Now()
		r := l.send(allowedV4, 443, 0, 8*time.Second, "\n", hello[:20])
		if r.OK || r.Errno == "timeout" {
			t.Errorf("half a ClientHello: %v, want the connection closed by the gateway", r)
		} else if took := time.Since(start); took < 4*time.Second || took > 7*time.Second {
			t.Errorf("half a ClientHello was closed after %v, want after the gateway's 5 s", took)
		}
	})
	t.Run("AllowedNameInSpecialRange", func(t *testing.T) {
		l := l.on(t)
		l.stopped("SNI ten.private.test", privateV4, 443, clientHello("ten.private.test", false))
		l.stopped("SNI ten.private.test at an allowed address", allowedV4, 443, clientHello("ten.private.test", false))
		l.stopped("SNI meta.private.test", allowedV4, 443, clientHello("meta.private.test", false))
	})
	t.Run("ECH", func(t *testing.T) {
		l := l.on(t)
		l.stopped("ECH with the outer name public.ech.test", allowedV4, 443, clientHello("public.ech.test", true))
		// An allowed outer name passes: what it hides is not seen (docs/gateway.md).
		l.reaches("ECH with the outer name allowed.test", allowedV4, 443, addr(allowedV4, 443), clientHello("allowed.test", true))
	})
	t.Run("PlainHTTP", func(t *testing.T) {
		l := l.on(t)
		r := l.send(allowedV4, 80, 0, 2*time.Second, "hello http", httpHead("allowed.test"))
		if want := "hello http " + addr(allowedV4, 80); !r.OK || !strings.Contains(r.Data, want) {
			t.Errorf("Host allowed.test at %s: %v, want %q", addr(allowedV4, 80), r, want)
		}
		l.stopped("Host cohost.test", allowedV4, 80, httpHead("cohost.test"))
		l.stopped("no Host", allowedV4, 80, []byte("GET / HTTP/1.0\r\n\r\n"))
	})
	t.Run("OtherProtocols", func(t *testing.T) {
		l := l.on(t)
		l.stopped("a line of text", allowedV4, 443, []byte("echo hi\n"))
		// CIDRs stay address-based: any protocol, the address dialled.
		l.connects(cidrHost, 8443)
	})
}

// newGatewayLab starts the lab's firewall, which has the gateway as every
// allowlist profile has (generator sets Policy.Gateway), and logs the
// egress's output when the test fails.
func newGatewayLab(t testing.TB) *lab {
	testenv.RequireProgram(t, "haproxy")
	l := newLab(t)
	if l.files["haproxy.cfg"] == nil {
		t.Fatal("the lab's generated files hold no haproxy.cfg: the gateway is off")
	}
	p := l.startReady()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the egress log:\n%s", p.Output())
		}
	})
	return l
}

// TestLabGatewayGrant: a timed grant of a name (agentbox allow NAME) works
// through the gateway on its ports, and ends on time with the keeper killed:
// HAProxy compares the grant's end with the clock, and the kernel's element
// expires under HAProxy's own connection. A revoke ends it at once.
func TestLabGatewayGrant(t *testing.T) {
	l := newGatewayLab(t)
	p := l.egress
	hello := clientHello("granted.test", false)
	l.stopped("SNI granted.test before its grant", unlistedV4, 443, hello)
	l.resolve("allowed.test", "A") // the address the agent dials below

	if out, code := egressCmd(t, p, "grant-name", "granted.test", "443", "3"); code != 0 {
		t.Fatalf("grant-name: exit %d: %s", code, out)
	}
	granted := time.Now()
	// granted.test resolves to unlistedV4 and unlistedV6; the agent dials
	// another address. (do-resolve's family is a preference: when the
	// filter resolver does not answer A in time, HAProxy takes AAAA.)
	unlisted := addr(unlistedV4, 443) + "|" + addr(unlistedV6, 443)
	l.reaches("SNI granted.test during its grant", allowedV4, 443, unlisted, hello)
	l.reaches("SNI sub.granted.test during its grant", allowedV4, 443, unlisted, clientHello("sub.granted.test", false))
	l.stopped("Host granted.test on port 80, not granted", allowedV4, 80, httpHead("granted.test"))
	// A connection opened during the grant, kept (the server skips the
	// ClientHello's line).
	held := append(clientHello("granted.test", false), '\n')
	if bytes.Count(held, []byte("\n")) != 1 {
		t.Fatal("the ClientHello holds a newline")
	}
	if r := l.do(netlab.Request{Op: "open", ID: "held", Addr: addr(allowedV4, 443), Chunks: [][]byte{held}}); !r.OK {
		t.Fatalf("opening a connection during the grant: %v", r)
	}
	if r := l.do(netlab.Request{Op: "echo", ID: "held", Line: "during"}); !r.OK {
		t.Fatalf("echo during the grant: %v", r)
	}

	keeper := pidIn(t, p, "/run/agentbox/keeper.pid")
	if out, code, err := p.Enter("kill", "-KILL", strconv.Itoa(keeper)); err != nil || code != 0 {
		t.Fatalf("killing the keeper: %v %d %s", err, code, out)
	}
	time.Sleep(time.Until(granted.Add(3200 * time.Millisecond)))
	l.stopped("SNI granted.test after its grant, the keeper dead", allowedV4, 443, hello)
	l.stopped("SNI granted.test after its grant, at its address", unlistedV4, 443, hello)
	// The kernel's element is gone: HAProxy's own connection to the name's
	// address is refused, and the agent's ends with it.
	if r := l.do(netlab.Request{Op: "echo", ID: "held", Line: "after", Timeout: 500 * time.Millisecond}); r.OK {
		t.Errorf("the connection opened during the grant still works after it expired: %v", r)
	}

	if out, code := egressCmd(t, p, "grant-name", "again.test", "443", "60"); code != 0 {
		t.Fatalf("grant-name: exit %d: %s", code, out)
	}
	l.reaches("SNI again.test during its grant", allowedV4, 443, unlisted, clientHello("again.test", false))
	if out, code := egressCmd(t, p, "revoke-name", "again.test", "443"); code != 0 {
		t.Fatalf("revoke-name: exit %d: %s", code, out)
	}
	l.stopped("SNI again.test after its revoke", allowedV4, 443, clientHello("again.test", false))
	l.healthy(p)
}

// TestLabGatewayGrantOtherPort: a timed grant of a name on a port where the
// policy allows no name, so that no listener of its own waits there, goes
// through the gateway too. IPv4 goes to GatewayGrantListen, which reads the
// port the agent dialled back from the redirect and admits the granted
// name alone on it; another name at the granted name's address is refused
// (address-based, it would pass), and so are IPv6 (Linux does not tell
// the gateway its port) and the ports not granted (at once, by the
// filter). The grant ends on time with the keeper killed, and a revoke at
// once.
func TestLabGatewayGrantOtherPort(t *testing.T) {
	l := newGatewayLab(t)
	p := l.egress
	const port = 8443
	hello := clientHello("granted.test", false)
	l.stopped("SNI granted.test before its grant", unlistedV4, port, hello)
	if out, code := egressCmd(t, p, "grant-name", "granted.test", strconv.Itoa(port), "3"); code != 0 {
		t.Fatalf("grant-name: exit %d: %s", code, out)
	}
	granted := time.Now()
	// granted.test and every other name resolve to unlistedV4 and
	// unlistedV6 in the lab.
	l.resolve("granted.test", "A")
	l.resolve("granted.test", "AAAA")
	l.reaches("SNI granted.test during its grant", unlistedV4, port, addr(unlistedV4, port), hello)
	l.reaches("Host sub.granted.test during its grant", unlistedV4, port, addr(unlistedV4, port), httpHead("sub.granted.test"))
	l.stopped("SNI other.test at granted.test's address", unlistedV4, port, clientHello("other.test", false))
	l.stopped("SNI granted.test over IPv6", unlistedV6, port, hello)
	// The grants' listener dialled by the agent itself: the port it reads
	// back is its own, which no grant names.
	l.stopped("SNI granted.test to the grants' listener", "127.0.0.1", firewall.GatewayGrantListen, hello)
	// The records name the port the agent dialled. (HAProxy writes one
	// as its connection ends, through a relay: it may come a moment after
	// the agent saw the end.)
	for _, w := range []recordWant{
		{name: "granted.test", port: port, verdict: connlog.Allowed, why: connlog.ReasonAllowed, addr: unlistedV4, up: true, down: true},
		{name: "other.test", port: port, verdict: connlog.Refused, why: firewall.GatewayWhyName, up: true},
	} {
		if _, ok := eventually(3*time.Second, func() bool {
			log, err := connlog.Parse(strings.NewReader(p.Output()), time.Time{})
			return err == nil && slices.ContainsFunc(log.Connections, w.matches)
		}); !ok {
			t.Errorf("no record %+v in:\n%s", w, strings.Join(gatewayRecordLines(p.Output()), "\n"))
		}
	}
	// A port not granted: refused at once by the filter (a reset), not
	// taken by the gateway.
	l.refuses(unlistedV4, 853)

	keeper := pidIn(t, p, "/run/agentbox/keeper.pid")
	if out, code, err := p.Enter("kill", "-KILL", strconv.Itoa(keeper)); err != nil || code != 0 {
		t.Fatalf("killing the keeper: %v %d %s", err, code, out)
	}
	time.Sleep(time.Until(granted.Add(3200 * time.Millisecond)))
	l.stopped("SNI granted.test after its grant, the keeper dead", unlistedV4, port, hello)

	if out, code := egressCmd(t, p, "grant-name", "again.test", strconv.Itoa(port), "60"); code != 0 {
		t.Fatalf("grant-name: exit %d: %s", code, out)
	}
	l.resolve("again.test", "A")
	l.reaches("SNI again.test during its grant", unlistedV4, port, addr(unlistedV4, port), clientHello("again.test", false))
	if out, code := egressCmd(t, p, "revoke-name", "again.test", strconv.Itoa(port)); code != 0 {
		t.Fatalf("revoke-name: exit %d: %s", code, out)
	}
	l.stopped("SNI again.test after its revoke", unlistedV4, port, clientHello("again.test", false))
}

// TestLabGatewayFailClosed: with HAProxy gone, the agent's connections to
// the ports of allowed names reach nothing (the redirect stays, nothing
// listens), the healthcheck fails, and the agent cannot listen in its
// place (the listeners' ports are below 1024).
func TestLabGatewayFailClosed(t *testing.T) {
	l := newGatewayLab(t)
	p := l.egress
	l.resolve("allowed.test", "A")
	l.reaches("SNI allowed.test", allowedV4, 443, addr(allowedV4, 443), clientHello("allowed.test", false))
	gw := pidIn(t, p, "/run/agentbox/gateway.pid")
	if out, code, err := p.Enter("kill", "-KILL", strconv.Itoa(gw)); err != nil || code != 0 {
		t.Fatalf("killing HAProxy: %v %d %s", err, code, out)
	}
	time.Sleep(100 * time.Millisecond)
	l.stopped("SNI allowed.test, HAProxy dead", allowedV4, 443, clientHello("allowed.test", false))
	l.stopped("Host allowed.test, HAProxy dead", allowedV4, 80, httpHead("allowed.test"))
	listen := fmt.Sprintf(`IO::Socket::INET->new(LocalAddr => "127.0.0.1:%d", Listen => 1) or die "$!\n"; print "listening\n"`, firewall.GatewayListenBase)
	if r := l.do(netlab.Request{Op: "exec", Argv: []string{"perl", "-MIO::Socket::INET", "-e", listen}}); !strings.Contains(r.Data, "Permission denied") {
		t.Errorf("the agent listens on the gateway's port %d: %v", firewall.GatewayListenBase, r)
	}
	argv := append(netlab.CapArgv(egressCaps), firewall.HealthCommand...)
	if out, code, err := p.Enter(argv...); err != nil || code == 0 || !strings.Contains(out, "gateway") {
		t.Errorf("the healthcheck with HAProxy dead: exit %d (%v): %s", code, err, out)
	}
}

// TestLabGatewayNoIPv6Loopback: in a namespace whose loopback has no ::1
// (Docker's default network without IPv6 disables it), the gateway starts
// with its IPv4 listeners only, and names pass through it.
func TestLabGatewayNoIPv6Loopback(t *testing.T) {
	testenv.RequireProgram(t, "haproxy")
	l := newLab(t)
	l.lab.Sysctl(l.sbx, "net/ipv6/conf/lo/disable_ipv6", "1")
	p := l.startReady()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the egress log:\n%s", p.Output())
		}
	})
	l.resolve("allowed.test", "A")
	l.connectsName("allowed.test", allowedV4, 443, addr(allowedV4, 443))
	l.stopped("SNI cohost.test", allowedV4, 443, clientHello("cohost.test", false))
}
