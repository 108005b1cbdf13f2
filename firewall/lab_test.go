package firewall_test

// The firewall lab: the firewall program that `agentbox generate` writes for
// testdata/lab/agentbox.yaml, run as generated in network namespaces that
// the test creates, against real traffic. Nothing leaves the lab.
//
//	sandbox namespace                      "internet" namespace
//	  eth0 172.30.0.2/24, fd00:ab::2/64 ---- eth0 172.30.0.1/24, fd00:ab::1/64 (the gateway)
//	  the entrypoint (bash, nft, dnsmasq)    fake upstream DNS 198.18.0.53, rogue DNS 198.18.0.99
//	  a fake Docker DNS on 127.0.0.11:5301   TCP, HTTP and UDP echo on every address (lo):
//	  the agent: uid 1000, no capabilities   198.18.0.0/15, 2001:2::/48, 10.1.2.3, 169.254.169.254, ...

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	_ "github.com/agentbox-dev/agentbox/internal/golden" // the shared -update flag
	"github.com/agentbox-dev/agentbox/internal/netlab"
	"github.com/agentbox-dev/agentbox/internal/testenv"
)

// TestLabHelper is the entry point of the lab's helper processes (the fake
// internet, the agent); in a normal run it does nothing.
func TestLabHelper(t *testing.T) { netlab.HelperMain() }

// The agent's uid, as in the agent container (not firewall.DNSUID).
const agentUID = 1000

// Addresses of the lab.
const (
	sandboxV4 = "172.30.0.2"
	gatewayV4 = "172.30.0.1"
	sandboxV6 = "fd00:ab::2"
	gatewayV6 = "fd00:ab::1"

	upstream   = "198.18.0.53" // the egress container's resolver (resolv.conf)
	rogue      = "198.18.0.99" // another resolver, with its own answers
	rogueV6    = "2001:2::99"
	rogueV4Ans = "198.18.0.66" // what the rogue resolver answers for every name

	allowedV4  = "198.18.0.10" // allowed.test
	allowedV6  = "2001:2::10"
	wildV4     = "198.18.0.20" // wild.test and below
	v6Only     = "2001:2::60"  // v6.test
	unlistedV4 = "198.18.0.11" // what the upstream answers for any other name
	unlistedV6 = "2001:2::11"
	cidrHost   = "198.19.0.5"   // in the policy's CIDR 198.19.0.0/24 (port 8443)
	cidrHost2  = "198.19.0.200" // another one
	outsideV4  = "198.19.1.5"   // next to it, not listed
	privateV4  = "10.1.2.3"
	mixedV4    = "198.18.0.30" // mixed.private.test, with privateV4
	metadataV4 = "169.254.169.254"
	cgnatV4    = "100.64.0.1"
	ulaV6      = "fd00:1::1"

	// 10.99.0.5 embedded in IPv6 addresses: on a network with a translator
	// (NAT64) or relay (6to4), or a tunnel for IPv4-compatible addresses,
	// they reach the private IPv4 address. Here they are hosts of their
	// own, as reachable as any other.
	nat64V6  = "64:ff9b::a63:5"
	sixTo4V6 = "2002:a63:5::1"
	compatV6 = "::a63:5"
	// 198.18.0.21, a public address, through NAT64: allowed.
	publicNAT64V6 = "64:ff9b::c612:15"

	// An unlisted host that the agent tries to reach through an allowed
	// one with an IPv6 segment routing header, which the internet follows.
	routedV6 = "2001:2::70"

	dockerDNS = "127.0.0.11:5301" // where Docker's embedded DNS really listens

	poseTarget = "127.0.0.1:61000" // a source port of dnsmasq's queries
)

// rotating are the addresses the upstream gives rotate.test, one per lookup.
var rotating = []string{"198.18.1.1", "198.18.1.2", "198.18.1.3", "198.18.1.4", "198.18.1.5", "198.18.1.6", "198.18.1.7", "198.18.1.8"}

// egressCaps are the capabilities of the egress container
// (.agentbox/docker-compose.yml: cap_drop ALL, cap_add these).
var egressCaps = []string{"kill", "net_admin", "net_bind_service", "setgid", "setuid"}

func requireLab(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t)
	for _, p := range []string{"ip", "nft", "dnsmasq", "setpriv", "unshare", "nsenter", "mount", "bash", "flock"} {
		testenv.RequireProgram(t, p)
	}
}

// generated returns the egress files that `agentbox generate` writes for
// testdata/lab, keyed rules.nft, dnsmasq.conf and entrypoint.sh.
func generated(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := generator.Build("testdata/lab")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, name := range []string{"rules.nft", "dnsmasq.conf", "entrypoint.sh"} {
		data, ok := files[generator.EgressDir+"/"+name]
		if !ok {
			t.Fatalf("generator.Build wrote no %s/%s", generator.EgressDir, name)
		}
		out[name] = data
	}
	return out
}

// upstreamRecords are the fake upstream's answers. Every other name gets
// addresses that no allowed name has, so that a query that leaks past the
// filter shows.
var upstreamRecords = []netlab.Record{
	{Name: "allowed.test", Type: "A", Values: []string{allowedV4}, TTL: 60},
	{Name: "allowed.test", Type: "AAAA", Values: []string{allowedV6}, TTL: 60},
	{Name: "allowed.test", Type: "TXT", Values: []string{"allowed.test text"}, TTL: 60},
	{Name: "nat64.wild.test", Type: "AAAA", Values: []string{publicNAT64V6}, TTL: 60}, // before wild.test, which matches it too
	{Name: "wild.test", Type: "A", Values: []string{wildV4}, TTL: 60},
	{Name: "wild.test", Type: "AAAA", Values: []string{"2001:2::20"}, TTL: 60},
	{Name: "rotate.test", Type: "A", Values: rotating, Rotate: true, TTL: 0},
	{Name: "v6.test", Type: "AAAA", Values: []string{v6Only}, TTL: 60},
	{Name: "ten.private.test", Type: "A", Values: []string{privateV4}, TTL: 60},
	{Name: "meta.private.test", Type: "A", Values: []string{metadataV4}, TTL: 60},
	{Name: "lo.private.test", Type: "A", Values: []string{"127.0.0.2"}, TTL: 60},
	{Name: "cgnat.private.test", Type: "A", Values: []string{cgnatV4}, TTL: 60},
	{Name: "gw.private.test", Type: "A", Values: []string{gatewayV4}, TTL: 60},
	{Name: "ula.private.test", Type: "AAAA", Values: []string{ulaV6}, TTL: 60},
	{Name: "ll.private.test", Type: "AAAA", Values: []string{"fe80::1"}, TTL: 60},
	{Name: "mixed.private.test", Type: "A", Values: []string{mixedV4, privateV4}, TTL: 60},
	{Name: "nat64.private.test", Type: "AAAA", Values: []string{nat64V6}, TTL: 60},
	{Name: "6to4.private.test", Type: "AAAA", Values: []string{sixTo4V6}, TTL: 60},
	{Name: "compat.private.test", Type: "AAAA", Values: []string{compatV6}, TTL: 60},
	{Name: "*", Type: "A", Values: []string{unlistedV4}, TTL: 60},
	{Name: "*", Type: "AAAA", Values: []string{unlistedV6}, TTL: 60},
	{Name: "*", Type: "TXT", Values: []string{"upstream text"}, TTL: 60},
}

// lab is a running firewall lab.
type lab struct {
	t        testing.TB
	lab      *netlab.Lab
	sbx, net string
	files    map[string][]byte
	internet *netlab.Helper // root in the internet namespace: the servers
	docker   *netlab.Helper // root in the sandbox: the fake Docker DNS
	agent    *netlab.Helper // uid 1000 in the sandbox
	egress   *netlab.Proc   // the entrypoint
	routed   int            // what routedPackets returned before the battery
}

// newLab builds the namespaces and starts the servers and the agent; the
// firewall is not started.
func newLab(t testing.TB) *lab {
	t.Helper()
	requireLab(t)
	l := &lab{t: t, lab: netlab.New(t, "TestLabHelper"), files: generated(t)}
	l.sbx, l.net = l.lab.Namespace("sbx"), l.lab.Namespace("net")
	l.lab.Veth(l.sbx, "eth0", l.net, "eth0")
	l.lab.IP(l.sbx,
		"addr add "+sandboxV4+"/24 dev eth0",
		"addr add "+sandboxV6+"/64 dev eth0 nodad",
		"route add default via "+gatewayV4,
		"route add ::/0 via "+gatewayV6)
	l.lab.IP(l.net, internetAddrs()...)
	// The internet follows segment routing headers (RFC 8754) and counts
	// the packets routedV6 sends: its answers to anything that reached it.
	// (The last segment is delivered without passing the input hook again.)
	l.lab.Sysctl(l.net, "net/ipv6/conf/all/seg6_enabled", "1")
	l.lab.Sysctl(l.net, "net/ipv6/conf/eth0/seg6_enabled", "1")
	if _, err := l.lab.Exec(l.net, "nft", "add table ip6 netlab; add chain ip6 netlab output { type filter hook output priority 0; };"+
		"add rule ip6 netlab output ip6 saddr "+routedV6+" counter"); err != nil {
		t.Fatal(err)
	}
	// Docker lets every group open ICMP datagram sockets ("ping") in a
	// container; the agent may try.
	l.lab.Sysctl(l.sbx, "net/ipv4/ping_group_range", "0 2147483647")

	var err error
	if l.internet, err = l.lab.StartHelper(l.net, "server", 0); err != nil {
		t.Fatal(err)
	}
	l.serve(l.internet, &netlab.ServerConfig{
		DNS: []netlab.DNSServer{
			{Listen: []string{upstream + ":53", upstream + ":5300"}, Records: upstreamRecords},
			{Listen: []string{rogue + ":53", "[" + rogueV6 + "]:53"}, Records: []netlab.Record{
				{Name: "*", Type: "A", Values: []string{rogueV4Ans}, TTL: 60},
				{Name: "*", Type: "AAAA", Values: []string{"2001:2::66"}, TTL: 60},
				{Name: "*", Type: "TXT", Values: []string{"rogue text"}, TTL: 60},
			}},
		},
		TCP:  []string{"0.0.0.0:22", "0.0.0.0:443", "0.0.0.0:853", "0.0.0.0:8080", "0.0.0.0:8443", "[::]:443", "[::]:853", "[::]:8443"},
		HTTP: []string{"0.0.0.0:80", "[::]:80"},
		// Not on wildcards: the echo must come from the address asked.
		UDP: []string{addr(allowedV4, 443), addr(unlistedV4, 9999), addr(allowedV6, 443)},
	})
	if l.docker, err = l.lab.StartHelper(l.sbx, "server", 0); err != nil {
		t.Fatal(err)
	}
	l.serve(l.docker, &netlab.ServerConfig{DNS: []netlab.DNSServer{{Listen: []string{dockerDNS}, Records: []netlab.Record{
		{Name: "*", Type: "A", Values: []string{"198.18.0.77"}, TTL: 60},
	}}}})
	if l.agent, err = l.lab.StartHelper(l.sbx, "agent", agentUID); err != nil {
		t.Fatal(err)
	}
	return l
}

// internetAddrs are the ip(8) commands that give the internet's namespace
// its addresses: the gateway's, and every test host's on loopback.
func internetAddrs() []string {
	hosts := []string{
		"addr add " + gatewayV4 + "/24 dev eth0",
		"addr add " + gatewayV6 + "/64 dev eth0 nodad",
	}
	for _, a := range append([]string{upstream, rogue, allowedV4, wildV4, unlistedV4, cidrHost, cidrHost2, outsideV4, privateV4, metadataV4, cgnatV4, mixedV4}, rotating...) {
		hosts = append(hosts, "addr add "+a+"/32 dev lo")
	}
	for _, a := range []string{allowedV6, "2001:2::20", unlistedV6, v6Only, rogueV6, ulaV6, nat64V6, sixTo4V6, compatV6, publicNAT64V6, routedV6} {
		hosts = append(hosts, "addr add "+a+"/128 dev lo nodad")
	}
	return hosts
}

func (l *lab) serve(h *netlab.Helper, cfg *netlab.ServerConfig) {
	l.t.Helper()
	if r, err := h.Call(netlab.Request{Op: "start", Server: cfg}); err != nil || !r.OK {
		l.t.Fatalf("starting servers: %v %v", r, err)
	}
}

// egressSpec is the egress container, as .agentbox/egress.Dockerfile and
// docker-compose.yml make it: the generated files at their paths, the
// agentbox-dns user, tmpfs on /run and /tmp, five capabilities and
// no-new-privileges. resolv.conf names the fake upstream.
func (l *lab) egressSpec() netlab.Spec {
	l.t.Helper()
	return netlab.Spec{
		Files: map[string]netlab.File{
			firewall.RulesPath:      {Data: l.files["rules.nft"], Mode: 0o644},
			firewall.DnsmasqPath:    {Data: l.files["dnsmasq.conf"], Mode: 0o644},
			firewall.EntrypointPath: {Data: l.files["entrypoint.sh"], Mode: 0o755},
			"/etc/resolv.conf":      {Data: []byte("nameserver " + upstream + "\n"), Mode: 0o644},
			"/etc/passwd": {Data: withUser(l.t, "/etc/passwd",
				fmt.Sprintf("%s:x:%d:%d::/nonexistent:/usr/sbin/nologin", firewall.DNSUser, firewall.DNSUID, firewall.DNSUID)), Mode: 0o644},
			"/etc/group": {Data: withUser(l.t, "/etc/group", fmt.Sprintf("%s:x:%d:", firewall.DNSUser, firewall.DNSUID)), Mode: 0o644},
		},
		Tmpfs: []string{"/run", "/tmp"},
		Caps:  egressCaps,
		Argv:  []string{firewall.EntrypointPath},
	}
}

// withUser returns a copy of the machine's passwd or group file without
// entries for firewall.DNSUser, plus entry unless it is empty.
func withUser(t testing.TB, file, entry string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if !strings.HasPrefix(line, firewall.DNSUser+":") {
			out = append(out, line)
		}
	}
	if entry != "" {
		out = append(out, entry)
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// on returns l for use by the (sub)test t.
func (l *lab) on(t testing.TB) *lab {
	c := *l
	c.t = t
	return &c
}

// start starts the entrypoint with spec and returns it; l.egress is the
// latest.
func (l *lab) start(spec netlab.Spec) *netlab.Proc {
	l.t.Helper()
	p, err := l.lab.Start(l.sbx, spec)
	if err != nil {
		l.t.Fatal(err)
	}
	l.egress = p
	return p
}

// ready waits for the entrypoint's ready line and returns it.
func (l *lab) ready(p *netlab.Proc) netlab.Line {
	l.t.Helper()
	line, _, ok := p.Log().Await(0, "agentbox-egress: ready (", 10*time.Second)
	if !ok {
		l.t.Fatalf("the entrypoint did not get ready; its output:\n%s", p.Output())
	}
	return line
}

// startReady starts the generated entrypoint and waits until it is ready.
func (l *lab) startReady() *netlab.Proc {
	l.t.Helper()
	p := l.start(l.egressSpec())
	l.ready(p)
	return p
}

// do makes the agent attempt req.
func (l *lab) do(req netlab.Request) netlab.Response {
	l.t.Helper()
	r, err := l.agent.Call(req)
	if err != nil {
		l.t.Fatal(err)
	}
	if r.OK && r.Tries > 1 {
		l.t.Logf("%s: answered at try %d", describe(req), r.Tries)
	}
	return r
}

// nft runs nft as root in the sandbox namespace (as `docker compose exec
// egress nft ...` would).
func (l *lab) nft(args ...string) string {
	l.t.Helper()
	out, err := l.lab.Exec(l.sbx, append([]string{"nft"}, args...)...)
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

var counterRE = regexp.MustCompile(`counter (\w+) \{[^}]*?packets (\d+) bytes`)

// counters returns the packets of each named counter of the table.
func (l *lab) counters() map[string]int {
	l.t.Helper()
	m := map[string]int{}
	for _, c := range counterRE.FindAllStringSubmatch(l.nft("list", "counters", "table", "inet", "agentbox"), -1) {
		m[c[1]], _ = strconv.Atoi(c[2])
	}
	return m
}

// setHas reports whether a set of the table holds addr.
func (l *lab) setHas(set, addr string) bool {
	l.t.Helper()
	_, err := l.lab.Exec(l.sbx, "nft", "get", "element", "inet", "agentbox", set, "{ "+addr+" }")
	return err == nil
}

// routedPackets returns how many packets routedV6 sent: none unless
// something reached it.
func (l *lab) routedPackets() int {
	l.t.Helper()
	out, err := l.lab.Exec(l.net, "nft", "list", "chain", "ip6", "netlab", "output")
	if err != nil {
		l.t.Fatal(err)
	}
	m := regexp.MustCompile(`counter packets (\d+)`).FindStringSubmatch(out)
	if m == nil {
		l.t.Fatalf("no counter in:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// events returns what the internet's servers saw from number since on.
func (l *lab) events(since int) []netlab.Event {
	l.t.Helper()
	r, err := l.internet.Call(netlab.Request{Op: "events", Since: since})
	if err != nil {
		l.t.Fatal(err)
	}
	return r.Events
}

func (l *lab) eventCount() int { return len(l.events(0)) }

func addr(host string, port int) string {
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// agentResolver is the agent container's resolver: Docker's embedded DNS,
// which the firewall's redirect replaces with the filter.
const agentResolver = "127.0.0.11:53"

// fast is how soon a blocked attempt must fail: the firewall rejects at once,
// nothing waits for a timeout.
const fast = 100 * time.Millisecond

// TestLab checks that the lab lets everything through without the firewall
// (WithoutFirewall), then runs the generated firewall and checks what the
// agent can reach (Allowed), the bypass battery (Blocked), and what the logs
// show (Audit).
func TestLab(t *testing.T) {
	base := newLab(t)
	if r := base.do(netlab.Request{Op: "ping"}); r.Data != fmt.Sprintf("uid %d", agentUID) {
		t.Fatalf("the agent runs as %q", r.Data)
	}
	t.Run("WithoutFirewall", func(t *testing.T) { testOpen(t, base.on(t)) })
	base.startReady()
	t.Run("Allowed", func(t *testing.T) { testAllowed(t, base.on(t)) })
	t.Run("Blocked", func(t *testing.T) { testBlocked(t, base.on(t)) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, base.on(t)) }) // last: it stops the firewall
}
