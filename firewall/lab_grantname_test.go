package firewall_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// egressCmd runs the entrypoint in the egress's namespaces with its
// capabilities, as agentbox allow does with docker exec.
func egressCmd(t testing.TB, p *netlab.Proc, args ...string) (string, int) {
	t.Helper()
	argv := append(netlab.CapArgv(egressCaps), append([]string{firewall.EntrypointPath}, args...)...)
	out, code, err := p.Enter(argv...)
	if err != nil {
		t.Fatal(err)
	}
	return out, code
}

// nxdomain checks that name does not resolve for the agent.
func (l *lab) nxdomain(name string) {
	l.t.Helper()
	if r := l.do(dnsReq(agentResolver, "udp", name, "A")); r.Rcode != "NXDOMAIN" {
		l.t.Errorf("%s: %v, want NXDOMAIN", name, r)
	}
}

// eventually retries check (which reports whether it holds) until it
// holds or within has passed, and says how long it took.
func eventually(within time.Duration, check func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if check() {
			return time.Since(start), true
		}
		if time.Since(start) > within {
			return time.Since(start), false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// resolvesTo reports whether name resolves to want for the agent.
func (l *lab) resolvesTo(name, want string) bool {
	l.t.Helper()
	r := l.do(dnsReq(agentResolver, "udp", name, "A"))
	return r.OK && r.Rcode == "NOERROR" && slices.Equal(r.Answers, []string{want})
}

// pidIn reads a pid file of the egress (a pattern that matches one file).
func pidIn(t testing.TB, p *netlab.Proc, file string) int {
	t.Helper()
	out, code, err := p.Enter("sh", "-c", "cat "+file)
	pid, perr := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || code != 0 || perr != nil {
		t.Fatalf("reading %s: %q, exit %d, %v", file, out, code, err)
	}
	return pid
}

// TestLabGrantName: a timed grant of a name (agentbox allow NAME) makes the
// name and the names below it resolve, and their addresses reachable on the
// granted ports, at once; at expiry the kernel refuses them again (with the
// keeper, which reverts the DNS view, dead or alive) and the name is
// NXDOMAIN again.
func TestLabGrantName(t *testing.T) {
	l := newLab(t)
	p := l.startReady()
	enter := func(args ...string) (string, int) { t.Helper(); return egressCmd(t, p, args...) }
	l.nxdomain("granted.test")
	l.refuses(unlistedV4, 443)

	start := time.Now()
	if out, code := enter("grant-name", "granted.test", "443", "4"); code != 0 || !strings.Contains(out, "granted") {
		t.Fatalf("grant-name: exit %d: %s", code, out)
	}
	granted := time.Now() // the kernel's element is there: it expires before granted + 4 s
	if !l.resolvesTo("granted.test", unlistedV4) {
		t.Fatalf("granted.test does not resolve during its grant")
	}
	l.connectsName("granted.test", unlistedV4, 443, addr(unlistedV4, 443))
	// At once: nothing waits for a periodic reload (BenchmarkLabGrantName
	// measures how long it takes; a bound here only catches a wait).
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("from grant-name to the first connection: %v, want well under 3 s", took)
	}
	if !l.resolvesTo("sub.granted.test", unlistedV4) {
		t.Errorf("sub.granted.test does not resolve during the grant of granted.test")
	}
	l.nxdomain("other.test")
	l.stopped("Host granted.test on port 80", unlistedV4, 80, httpHead("granted.test")) // the grant names its ports
	if r := l.do(netlab.Request{Op: "open", ID: "named", Addr: addr(unlistedV4, 443), Chunks: [][]byte{helloLine("granted.test")}}); !r.OK {
		t.Fatalf("opening a connection during the grant: %v", r)
	}
	if out, _ := enter("grants"); !strings.HasPrefix(out, "granted.test 443 ") {
		t.Errorf("grants: %q", out)
	}

	// The grant resolver killed, the filter reloaded: the name works again
	// at once, until expiry.
	grantDNS := pidIn(t, p, "/run/agentbox/grants-dnsmasq-*.pid")
	if out, code, err := p.Enter("kill", "-KILL", strconv.Itoa(grantDNS)); err != nil || code != 0 {
		t.Fatalf("killing the grant resolver: %v %d %s", err, code, out)
	}
	if out, code, err := p.Enter("kill", "-HUP", strconv.Itoa(l.dnsmasqPid(p))); err != nil || code != 0 {
		t.Fatalf("reloading dnsmasq: %v %d %s", err, code, out)
	}
	if took, ok := eventually(3*time.Second, func() bool { return l.resolvesTo("granted.test", unlistedV4) }); !ok {
		t.Errorf("granted.test does not resolve after the grant resolver was killed")
	} else {
		t.Logf("the grant resolver answered again %v after it was killed", took.Round(time.Millisecond))
	}
	l.connectsName("granted.test", unlistedV4, 443, addr(unlistedV4, 443))

	// Expiry: new connections refused, the open one cut, NXDOMAIN again.
	time.Sleep(time.Until(granted.Add(4200 * time.Millisecond)))
	l.stopped("SNI granted.test after its grant", unlistedV4, 443, clientHello("granted.test", false))
	if r := l.do(netlab.Request{Op: "echo", ID: "named", Line: "after", Timeout: 300 * time.Millisecond}); r.OK {
		t.Errorf("the connection opened during the grant still works after it expired: %v", r)
	}
	if _, ok := eventually(time.Second, func() bool {
		return l.do(dnsReq(agentResolver, "udp", "granted.test", "A")).Rcode == "NXDOMAIN"
	}); !ok {
		t.Errorf("granted.test still resolves after its grant expired")
	}
	if out, _ := enter("grants"); out != "" {
		t.Errorf("grants after expiry: %q", out)
	}

	testGrantNameRevoke(t, l.on(t), p)
	testGrantNameRefusals(t, p)
	testGrantNameKeeperDead(t, l.on(t), p)
	l.healthy(p)
}

// testGrantNameRevoke: a revoke ends a name's grant early; a name that
// resolves into a private range stays refused.
func testGrantNameRevoke(t *testing.T, l *lab, p *netlab.Proc) {
	enter := func(args ...string) (string, int) { t.Helper(); return egressCmd(t, p, args...) }
	if out, code := enter("grant-name", "granted.test", "443,8443", "60"); code != 0 {
		t.Fatalf("grant-name: exit %d: %s", code, out)
	}
	if !l.resolvesTo("granted.test", unlistedV4) {
		t.Fatalf("granted.test does not resolve during its grant")
	}
	// On 8443, where the policy allows no name, through the gateway too:
	// the name in the ClientHello decides, and a protocol that carries none
	// (the server's greeting first) gets nothing.
	l.reaches("SNI granted.test on 8443", unlistedV4, 8443, addr(unlistedV4, 8443), clientHello("granted.test", false))
	l.stopped("SNI other.test on 8443 at granted.test's address", unlistedV4, 8443, clientHello("other.test", false))
	if r := l.do(netlab.Request{Op: "dial", Addr: addr(unlistedV4, 8443), Timeout: time.Second}); r.OK {
		t.Errorf("a connection without a name on a granted port reached the server: %v", r)
	}
	if out, code := enter("revoke-name", "granted.test", "443,8443"); code != 0 {
		t.Fatalf("revoke-name: exit %d: %s", code, out)
	}
	l.stopped("SNI granted.test after its revoke", unlistedV4, 443, clientHello("granted.test", false))
	l.refuses(unlistedV4, 8443)
	l.nxdomain("granted.test")

	// A name the policy allows on 443 and 80, granted on 8443 too.
	l.refuses(allowedV4, 8443)
	if out, code := enter("grant-name", "allowed.test", "8443", "60"); code != 0 {
		t.Fatalf("grant-name of an allowed name: exit %d: %s", code, out)
	}
	if !l.resolvesTo("allowed.test", allowedV4) {
		t.Fatalf("allowed.test does not resolve during its grant")
	}
	l.reaches("SNI allowed.test on 8443", allowedV4, 8443, addr(allowedV4, 8443), clientHello("allowed.test", false))
	l.connects(allowedV4, 443)
	enter("revoke-name", "allowed.test", "8443")
	l.refuses(allowedV4, 8443)
	l.connects(allowedV4, 443)

	if out, code := enter("grant-name", "ten.private.test", "443", "60"); code != 0 {
		t.Fatalf("grant-name of a name in a private range: exit %d: %s", code, out)
	}
	l.do(dnsReq(agentResolver, "udp", "ten.private.test", "A"))
	l.refuses(privateV4, 443)
	enter("revoke-name", "ten.private.test", "443")
}

// testGrantNameRefusals: malformed grants are refused and change nothing.
func testGrantNameRefusals(t *testing.T, p *netlab.Proc) {
	for _, args := range [][]string{
		{"grant-name", "granted", "443", "60"},
		{"grant-name", "granted.test.", "443", "60"},
		{"grant-name", "Granted.test", "443", "60"},
		{"grant-name", "-granted.test", "443", "60"},
		{"grant-name", "granted-.test", "443", "60"},
		{"grant-name", "granted..test", "443", "60"},
		{"grant-name", "*.granted.test", "443", "60"},
		{"grant-name", "granted.test;ls", "443", "60"},
		{"grant-name", "granted.test\n", "443", "60"},
		{"grant-name", "198.18.0.11", "443", "60"},
		{"grant-name", strings.Repeat("a", 64) + ".test", "443", "60"},
		{"grant-name", strings.Repeat("abcdefghi.", 26) + "test", "443", "60"},
		{"grant-name", "granted.test", "0", "60"},
		{"grant-name", "granted.test", "443,", "60"},
		{"grant-name", "granted.test", "443", "604801"},
		{"grant-name", "granted.test", "443", "-1"},
		{"grant-name", "granted.test", "443", "00"},
		{"revoke-name", "granted.test", "443"},
	} {
		if out, code := egressCmd(t, p, args...); code != 1 {
			t.Errorf("%q: exit %d, want 1: %s", args, code, out)
		}
	}
}

// testGrantNameKeeperDead: with the keeper (the helper that reverts the DNS
// view) killed, the kernel still ends the grant on time.
func testGrantNameKeeperDead(t *testing.T, l *lab, p *netlab.Proc) {
	if out, code := egressCmd(t, p, "grant-name", "kept.test", "443", "2"); code != 0 {
		t.Fatalf("grant-name: exit %d: %s", code, out)
	}
	start := time.Now()
	if !l.resolvesTo("kept.test", unlistedV4) {
		t.Fatalf("kept.test does not resolve during its grant")
	}
	l.connectsName("kept.test", unlistedV4, 443, addr(unlistedV4, 443))
	keeper := pidIn(t, p, "/run/agentbox/keeper.pid")
	if out, code, err := p.Enter("kill", "-KILL", strconv.Itoa(keeper)); err != nil || code != 0 {
		t.Fatalf("killing the keeper: %v %d %s", err, code, out)
	}
	if r := l.do(netlab.Request{Op: "open", ID: "kept", Addr: addr(unlistedV4, 443), Chunks: [][]byte{helloLine("kept.test")}}); !r.OK {
		t.Fatalf("opening a connection during the grant: %v", r)
	}
	time.Sleep(time.Until(start.Add(2200 * time.Millisecond)))
	l.stopped("SNI kept.test after its grant", unlistedV4, 443, clientHello("kept.test", false))
	if r := l.do(netlab.Request{Op: "echo", ID: "kept", Line: "after", Timeout: 300 * time.Millisecond}); r.OK {
		t.Errorf("the connection opened during the grant still works after it expired: %v", r)
	}
}

// TestLabGrantNameLatency measures the time from grant-name to the agent's
// first connection to the name (resolve, then connect), several times; and
// that a name granted all along keeps resolving at the first try while the
// other grants come and go (each change starts a new grant resolver).
func TestLabGrantNameLatency(t *testing.T) {
	l := newLab(t)
	p := l.startReady()
	if out, code := egressCmd(t, p, "grant-name", "steady.test", "443", "120"); code != 0 {
		t.Fatalf("grant-name: exit %d: %s", code, out)
	}
	other, err := l.lab.StartHelper(l.sbx, "agent", agentUID)
	if err != nil {
		t.Fatal(err)
	}
	stop, done, lostc := make(chan struct{}), make(chan string), make(chan int, 1)
	go func() {
		n, lost, slowest := 0, 0, time.Duration(0)
		for {
			select {
			case <-stop:
				lostc <- lost
				done <- fmt.Sprintf("%d lookups of steady.test during the changes: %d not answered at the first try, slowest %v", n, lost, slowest.Round(time.Millisecond))
				return
			default:
			}
			req := dnsReq(agentResolver, "udp", "steady.test", "A")
			req.Retries = 0
			start := time.Now()
			r, err := other.Call(req)
			n++
			slowest = max(slowest, time.Since(start))
			if err != nil || !slices.Equal(r.Answers, []string{unlistedV4}) {
				lost++
			}
		}
	}()
	var took []time.Duration
	for i := range 9 {
		name := "n" + strconv.Itoa(i) + ".test"
		start := time.Now()
		if out, code := egressCmd(t, p, "grant-name", name, "443", "60"); code != 0 {
			t.Fatalf("grant-name: exit %d: %s", code, out)
		}
		if r := l.do(dnsReq(agentResolver, "udp", name, "A")); !slices.Equal(r.Answers, []string{unlistedV4}) {
			t.Fatalf("%s: %v\n%s", name, r, p.Output())
		}
		l.connectsName(name, unlistedV4, 443, addr(unlistedV4, 443))
		took = append(took, time.Since(start))
		egressCmd(t, p, "revoke-name", name, "443")
	}
	close(stop)
	t.Log(<-done)
	if lost := <-lostc; lost > 0 {
		t.Errorf("%d lookups of a granted name failed while other grants changed", lost)
	}
	slices.Sort(took)
	t.Logf("from grant-name to the first connection, %d runs: median %v, min %v, max %v",
		len(took), took[len(took)/2].Round(time.Millisecond), took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
}
