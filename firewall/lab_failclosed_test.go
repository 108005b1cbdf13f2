package firewall_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// closedProbes are attempts that each succeed while the firewall runs (or
// when no ruleset is loaded at all): a CIDR of the policy, which needs no
// lookup, an allowed name's address, and DNS.
func closedProbes() []netlab.Request {
	short := 200 * time.Millisecond
	return []netlab.Request{
		{Op: "dial", Addr: addr(cidrHost, 8443), Timeout: short},
		{Op: "dial", Addr: addr(allowedV4, 443), Timeout: short},
		{Op: "dial", Addr: addr(allowedV6, 443), Timeout: short},
		{Op: "dns", Addr: agentResolver, Name: "allowed.test", Type: "A", Timeout: short},
		{Op: "dns", Addr: upstream + ":53", Net: "tcp", Name: "allowed.test", Type: "A", Timeout: short},
		{Op: "udp", Addr: addr(unlistedV4, 9999), Timeout: short},
	}
}

// open checks that the agent reaches the internet: without a ruleset the
// namespace is open, which makes assertClosed mean something.
func (l *lab) open() {
	l.t.Helper()
	l.connects(cidrHost, 8443)
	if r := l.do(dnsReq(upstream+":53", "udp", "other.test", "A")); !slices.Equal(r.Answers, []string{unlistedV4}) {
		l.t.Fatalf("without a firewall the upstream answers other.test with %s; got %v", unlistedV4, r)
	}
}

// assertClosed checks that nothing gets out: every probe fails and the
// internet sees none of them.
func (l *lab) assertClosed() {
	l.t.Helper()
	mark := l.eventCount()
	for _, req := range closedProbes() {
		// The output chain drops (no reject rule is left): TCP waits in
		// vain, sending UDP fails at once.
		want := "timeout"
		if req.Op == "udp" || (req.Op == "dns" && req.Net == "") {
			want = "EPERM"
		}
		if r := l.do(req); r.OK || r.Errno != want {
			l.t.Errorf("%s with egress closed: %v, want %s", describe(req), r, want)
		}
	}
	for _, e := range l.events(mark) {
		l.t.Errorf("with egress closed, the internet saw %+v", e)
	}
	// Whatever table is loaded, its output chain drops everything.
	chain := l.nft("list", "chain", "inet", "agentbox", "output")
	if !regexp.MustCompile(`\{\s*type filter hook output priority filter; policy drop;\s*\}`).MatchString(chain) {
		l.t.Errorf("the output chain is not empty with policy drop:\n%s", chain)
	}
}

// TestLabFailClosed checks that whenever the firewall cannot run, or stops,
// nothing gets out, and that a second copy changes nothing.
func TestLabFailClosed(t *testing.T) {
	t.Run("DnsmasqCannotStart", testDnsmasqCannotStart)
	t.Run("RulesetFailsToLoad", testRulesetFailsToLoad)
	t.Run("DnsmasqKilled", testDnsmasqKilled)
	t.Run("RunTwice", testRunTwice)
}

// testDnsmasqCannotStart: in an image without dnsmasq's user, dnsmasq exits
// at once; the entrypoint fails and egress stays closed.
func testDnsmasqCannotStart(t *testing.T) {
	l := newLab(t)
	l.open()
	spec := l.egressSpec()
	// An image without the agentbox-dns user: dnsmasq exits at once.
	spec.Files["/etc/passwd"] = netlab.File{Data: withUser(t, "/etc/passwd", ""), Mode: 0o644}
	spec.Files["/etc/group"] = netlab.File{Data: withUser(t, "/etc/group", ""), Mode: 0o644}
	p := l.start(spec)
	if code, err := p.Wait(10 * time.Second); err != nil || code == 0 {
		t.Fatalf("the entrypoint exited with %d (%v), want a failure; output:\n%s", code, err, p.Output())
	}
	for _, want := range []string{"unknown user or group: " + firewall.DNSUser, "error: dnsmasq exited during start", "egress closed"} {
		if !strings.Contains(p.Output(), want) {
			t.Errorf("the output lacks %q:\n%s", want, p.Output())
		}
	}
	l.assertClosed()
}

// testRulesetFailsToLoad: a ruleset nft refuses leaves the lockdown table
// loaded, and dnsmasq never starts.
func testRulesetFailsToLoad(t *testing.T) {
	l := newLab(t)
	l.open()
	spec := l.egressSpec()
	spec.Files[firewall.RulesPath] = netlab.File{Data: append(slices.Clone(l.files["rules.nft"]), "this is not nftables\n"...), Mode: 0o644}
	p := l.start(spec)
	if code, err := p.Wait(10 * time.Second); err != nil || code == 0 {
		t.Fatalf("the entrypoint exited with %d (%v), want a failure; output:\n%s", code, err, p.Output())
	}
	for _, want := range []string{"error: loading " + firewall.RulesPath + " failed", "lockdown table loaded"} {
		if !strings.Contains(p.Output(), want) {
			t.Errorf("the output lacks %q:\n%s", want, p.Output())
		}
	}
	if strings.Contains(p.Output(), "dnsmasq[") {
		t.Errorf("dnsmasq started:\n%s", p.Output())
	}
	l.assertClosed()
}

// testDnsmasqKilled: when dnsmasq dies the entrypoint exits and closes
// egress, established connections included.
func testDnsmasqKilled(t *testing.T) {
	l := newLab(t)
	p := l.startReady()
	l.resolve("allowed.test", "A")
	if r := l.do(netlab.Request{Op: "open", ID: "held", Addr: addr(allowedV4, 443), Chunks: [][]byte{helloLine("allowed.test")}}); !r.OK {
		t.Fatalf("connecting to allowed.test: %v", r)
	}
	if r := l.do(netlab.Request{Op: "echo", ID: "held", Line: "before"}); r.Data != "before" {
		t.Fatalf("echo over the connection: %v", r)
	}
	pid := l.dnsmasqPid(p)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(10 * time.Second); err != nil || code == 0 {
		t.Fatalf("the entrypoint exited with %d (%v) after dnsmasq died, want a failure; output:\n%s", code, err, p.Output())
	}
	for _, want := range []string{"error: dnsmasq exited (status 137)", "egress closed: every packet out is dropped"} {
		if !strings.Contains(p.Output(), want) {
			t.Errorf("the output lacks %q:\n%s", want, p.Output())
		}
	}
	// The established connection is cut too.
	if r := l.do(netlab.Request{Op: "echo", ID: "held", Line: "after", Timeout: 300 * time.Millisecond}); r.OK || r.Errno != "timeout" {
		t.Errorf("echo over the connection after dnsmasq died: %v, want no answer", r)
	}
	l.assertClosed()
}

// testRunTwice: a second copy changes nothing, and a restart replaces the
// table with the same one the first start made.
func testRunTwice(t *testing.T) {
	l := newLab(t)
	p := l.startReady()
	table := l.table()
	pid := l.dnsmasqPid(p)
	l.healthy(p)

	// A second copy in the same container (docker compose exec egress
	// agentbox-egress) changes nothing.
	argv := append(netlab.CapArgv(egressCaps), firewall.EntrypointPath, "run")
	out, code, err := p.Enter(argv...)
	if err != nil || code != 1 || !strings.Contains(out, "already running (lock /run/agentbox/lock is held); nothing changed") {
		t.Errorf("a second run: exit %d (%v), output %q; want exit 1, already running", code, err, out)
	}
	if got := l.table(); got != table {
		t.Errorf("the table changed:\n%s\nwas:\n%s", got, table)
	}
	if got := l.dnsmasqPid(p); got != pid {
		t.Errorf("dnsmasq's pid changed from %d to %d", pid, got)
	}
	l.healthy(p)
	l.works()

	// Stopped, then started again (a container restart): the new run
	// replaces the table, there is one.
	if code := p.Stop(5 * time.Second); code != 0 {
		t.Errorf("the entrypoint exited with %d on SIGTERM, want 0", code)
	}
	if !strings.Contains(p.Output(), "egress closed: every packet out is dropped") {
		t.Errorf("no \"egress closed\" on SIGTERM:\n%s", p.Output())
	}
	l.assertClosed()
	// A chain of the earlier table's that the new one does not have: a
	// restart that added to the old table instead of replacing it keeps it.
	l.nft("add", "chain", "inet", "agentbox", "left_by_the_earlier_start")
	p = l.startReady()
	if n := strings.Count(l.nft("list", "tables")+"\n", "table inet agentbox\n"); n != 1 {
		t.Errorf("%d tables inet agentbox after a restart, want 1", n)
	}
	// The first start created the table (a new namespace has none); the
	// restart found the lockdown and deleted it first: the same table.
	if got := l.table(); got != table {
		t.Errorf("the table after a restart differs from the first start's:\n%s\nwas:\n%s", got, table)
	}
	l.healthy(p)
	l.works()
}

// table lists the table without its counters' values: the kernel's own
// IPv6 multicast listener reports (to ff02::16) are rejected and counted at
// any time.
func (l *lab) table() string {
	l.t.Helper()
	return regexp.MustCompile(`packets \d+ bytes \d+`).ReplaceAllString(l.nft("list", "table", "inet", "agentbox"), "packets - bytes -")
}

// dnsmasqPid returns the pid of the entrypoint's dnsmasq.
func (l *lab) dnsmasqPid(p *netlab.Proc) int {
	l.t.Helper()
	out, code, err := p.Enter("cat", "/run/agentbox/dnsmasq.pid")
	pid, perr := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || code != 0 || perr != nil {
		l.t.Fatalf("reading dnsmasq's pid file: %q, exit %d, %v", out, code, err)
	}
	return pid
}

// healthy checks that the healthcheck of the compose file passes.
func (l *lab) healthy(p *netlab.Proc) {
	l.t.Helper()
	argv := append(netlab.CapArgv(egressCaps), firewall.HealthCommand...)
	if out, code, err := p.Enter(argv...); err != nil || code != 0 {
		l.t.Errorf("%s: exit %d (%v): %s", strings.Join(firewall.HealthCommand, " "), code, err, out)
	}
}

// works checks a listed name, a CIDR and an unlisted address.
func (l *lab) works() {
	l.t.Helper()
	if got := l.resolve("allowed.test", "A"); !slices.Equal(got, []string{allowedV4}) {
		l.t.Errorf("allowed.test is %q, want %s", got, allowedV4)
	}
	l.connects(allowedV4, 443)
	l.connects(cidrHost, 8443)
	l.refuses(unlistedV4, 443)
	if r := l.do(dnsReq(agentResolver, "udp", "other.test", "A")); r.Rcode != "NXDOMAIN" {
		l.t.Errorf("other.test: %v, want NXDOMAIN", r)
	}
}
