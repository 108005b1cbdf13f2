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
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	metadataV4 = "169.254.169.254"
	cgnatV4    = "100.64.0.1"
	ulaV6      = "fd00:1::1"

	dockerDNS = "127.0.0.11:5301" // where Docker's embedded DNS really listens
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
	hosts := []string{
		"addr add " + gatewayV4 + "/24 dev eth0",
		"addr add " + gatewayV6 + "/64 dev eth0 nodad",
	}
	for _, a := range append([]string{upstream, rogue, allowedV4, wildV4, unlistedV4, cidrHost, cidrHost2, outsideV4, privateV4, metadataV4, cgnatV4}, rotating...) {
		hosts = append(hosts, "addr add "+a+"/32 dev lo")
	}
	for _, a := range []string{allowedV6, "2001:2::20", unlistedV6, v6Only, rogueV6, ulaV6} {
		hosts = append(hosts, "addr add "+a+"/128 dev lo nodad")
	}
	l.lab.IP(l.net, hosts...)
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

// resolve asks the agent's resolver for name and returns the answers.
func (l *lab) resolve(name, typ string) []string {
	l.t.Helper()
	r := l.do(dnsReq(agentResolver, "udp", name, typ))
	if !r.OK || r.Rcode != "NOERROR" {
		l.t.Fatalf("%s %s: %v", typ, name, r)
	}
	return r.Answers
}

// connects checks that the agent reaches the TCP server at host:port.
func (l *lab) connects(host string, port int) {
	l.t.Helper()
	r := l.do(netlab.Request{Op: "dial", Addr: addr(host, port)})
	if want := "hello " + addr(host, port); !r.OK || r.Data != want {
		l.t.Errorf("connecting to %s: %v, want the server's %q", addr(host, port), r, want)
	}
}

// refuses checks that the firewall rejects a connection to host:port at once.
func (l *lab) refuses(host string, port int) {
	l.t.Helper()
	r := l.do(netlab.Request{Op: "dial", Addr: addr(host, port)})
	if err := refused(tcpRefusal(host))(l, r); err != nil {
		l.t.Errorf("connecting to %s: %v", addr(host, port), err)
	}
}

// tcpRefusal is the error of a rejected TCP connection: IPv4 gets ICMP
// admin-prohibited (EHOSTUNREACH), IPv6 a reset (ECONNREFUSED).
func tcpRefusal(host string) string {
	if strings.Contains(host, ":") {
		return "ECONNREFUSED"
	}
	return "EHOSTUNREACH"
}

// testOpen checks that without the firewall the agent reaches the servers
// that the battery's attempts aim at: what the battery shows blocked, the
// firewall blocks.
func testOpen(t *testing.T, l *lab) {
	dnsChecks := []struct {
		req  netlab.Request
		want string
	}{
		{dnsReq(upstream+":53", "udp", "other.test", "A"), unlistedV4},
		{dnsReq(upstream+":5300", "tcp", "other.test", "A"), unlistedV4},
		{dnsReq(rogue+":53", "tcp", "allowed.test", "A"), rogueV4Ans},
		{dnsReq("["+rogueV6+"]:53", "udp", "allowed.test", "A"), rogueV4Ans},
		{dnsReq(dockerDNS, "udp", "other.test", "A"), "198.18.0.77"},
	}
	for _, c := range dnsChecks {
		if r := l.do(c.req); !slices.Equal(r.Answers, []string{c.want}) {
			t.Errorf("%s: %v, want %s", describe(c.req), r, c.want)
		}
	}
	for _, a := range []string{addr(unlistedV4, 443), addr(unlistedV6, 443), addr(privateV4, 443), addr(cgnatV4, 443),
		addr(allowedV4, 8080), addr(allowedV4, 853), addr(ulaV6, 443), addr(gatewayV6, 443), addr(outsideV4, 8443)} {
		if r := l.do(netlab.Request{Op: "dial", Addr: a}); r.Data != "hello "+a {
			t.Errorf("connecting to %s: %v", a, r)
		}
	}
	for _, host := range []string{gatewayV4, metadataV4} {
		if r := l.do(netlab.Request{Op: "http", URL: "http://" + host + "/"}); r.Data != "hello http "+host+":80" {
			t.Errorf("GET http://%s/: %v", host, r)
		}
	}
	for _, req := range []netlab.Request{
		{Op: "udp", Addr: addr(allowedV4, 443)},
		{Op: "udp", Addr: addr(allowedV6, 443)},
		{Op: "icmp", Addr: allowedV4},
		{Op: "icmp", Addr: allowedV6},
	} {
		if r := l.do(req); !r.OK {
			t.Errorf("%s: %v", describe(req), r)
		}
	}
}

func testAllowed(t *testing.T, l *lab) {
	t.Run("ListedDomain", func(t *testing.T) {
		l := l.on(t)
		if got := l.resolve("allowed.test", "A"); !slices.Equal(got, []string{allowedV4}) {
			t.Fatalf("allowed.test is %q, want %s", got, allowedV4)
		}
		l.connects(allowedV4, 443)
		// Port 80 too, by name, as a program does it (Go's resolver and
		// net/http, the resolver being Docker's address).
		r := l.do(netlab.Request{Op: "http", URL: "http://allowed.test/", Resolver: agentResolver})
		if !r.OK || (r.Data != "hello http "+addr(allowedV4, 80) && r.Data != "hello http "+addr(allowedV6, 80)) {
			t.Errorf("GET http://allowed.test/: %v", r)
		}
		l.refuses(allowedV4, 8080) // and no other port
	})
	t.Run("WildcardSubdomain", func(t *testing.T) {
		l := l.on(t)
		l.refuses(wildV4, 443) // not before a lookup
		if got := l.resolve("deep.sub.wild.test", "A"); !slices.Equal(got, []string{wildV4}) {
			t.Fatalf("deep.sub.wild.test is %q, want %s", got, wildV4)
		}
		l.connects(wildV4, 443)
	})
	t.Run("CIDR", func(t *testing.T) {
		l := l.on(t)
		l.connects(cidrHost, 8443)
		l.connects(cidrHost2, 8443) // any address of 198.19.0.0/24, no lookup
	})
	t.Run("RotatingAddress", func(t *testing.T) {
		l := l.on(t)
		never := rotating[len(rotating)-1] // not handed out by three lookups
		l.refuses(never, 443)
		seen := map[string]bool{}
		for i := range 3 {
			got := l.resolve("rotate.test", "A")
			if len(got) != 1 || seen[got[0]] {
				t.Fatalf("lookup %d of rotate.test: %q, want a new address each time (seen %v)", i+1, got, seen)
			}
			seen[got[0]] = true
			l.connects(got[0], 443)
		}
		for a := range seen { // earlier addresses keep working
			l.connects(a, 443)
		}
		l.refuses(never, 443)
		var asked int
		for _, e := range l.events(0) {
			if e.Kind == "dns" && e.Name == "rotate.test" {
				asked++
			}
		}
		if asked < 3 {
			t.Errorf("the upstream saw %d queries for rotate.test, want one per lookup (3)", asked)
		}
	})
	t.Run("IPv6", func(t *testing.T) {
		l := l.on(t)
		l.refuses(v6Only, 443)
		if got := l.resolve("v6.test", "AAAA"); !slices.Equal(got, []string{v6Only}) {
			t.Fatalf("v6.test is %q, want %s", got, v6Only)
		}
		l.connects(v6Only, 443)
		if got := l.resolve("allowed.test", "AAAA"); !slices.Equal(got, []string{allowedV6}) {
			t.Fatalf("AAAA allowed.test is %q, want %s", got, allowedV6)
		}
		l.connects(allowedV6, 443)
		url := "http://" + addr(allowedV6, 80) + "/"
		if r := l.do(netlab.Request{Op: "http", URL: url}); !r.OK || r.Data != "hello http "+addr(allowedV6, 80) {
			t.Errorf("GET %s: %v", url, r)
		}
	})
}

// A check says why a response is not the one a blocked attempt must get.
type check func(l *lab, r netlab.Response) error

// refused: the attempt failed at once with errno.
func refused(errno string) check {
	return func(_ *lab, r netlab.Response) error {
		switch {
		case r.OK:
			return fmt.Errorf("it succeeded: %v", r)
		case r.Errno != errno:
			return fmt.Errorf("it failed with %q (%s), want %s", r.Errno, r.Err, errno)
		case r.Elapsed > fast:
			return fmt.Errorf("it failed after %v, want under %v", r.Elapsed, fast)
		}
		return nil
	}
}

// answer: the filter's answer, with exactly these values.
func answer(rcode string, values ...string) check {
	return func(_ *lab, r netlab.Response) error {
		if !r.OK || r.Rcode != rcode || !slices.Equal(r.Answers, values) {
			return fmt.Errorf("got %v, want %s %q", r, rcode, values)
		}
		return nil
	}
}

// rebind: the filter dropped an answer into a private range (dnsmasq's
// stop-dns-rebind answers NOERROR with no address) and logged it.
func rebind(name string) check {
	return func(l *lab, r netlab.Response) error {
		if err := answer("NOERROR")(l, r); err != nil {
			return err
		}
		if _, _, ok := l.egress.Log().Await(0, "possible DNS-rebind attack detected: "+name, 5*time.Second); !ok {
			return fmt.Errorf("dnsmasq logged no DNS-rebind attack for %s", name)
		}
		return nil
	}
}

// notPermitted: a command failed for lack of privilege.
func notPermitted(_ *lab, r netlab.Response) error {
	if r.OK || r.Exit <= 0 || !strings.Contains(r.Data, "Operation not permitted") {
		return fmt.Errorf("got %v, want a failure with \"Operation not permitted\"", r)
	}
	return nil
}

// noReply: the request went unanswered (the ICMPv6 echo socket reports
// no error when the firewall rejects a request).
func noReply(_ *lab, r netlab.Response) error {
	if r.OK || r.Errno != "timeout" {
		return fmt.Errorf("got %v, want no reply", r)
	}
	return nil
}

// attempt is one try of the bypass battery: reqs, each of which must meet
// want, after setup (whose results do not count).
type attempt struct {
	name  string
	setup []netlab.Request
	reqs  []netlab.Request
	want  check
}

// dnsReq is a lookup as a stub resolver makes it: a new socket for each try,
// and new tries after a timeout.
func dnsReq(server, network, name, typ string) netlab.Request {
	return netlab.Request{Op: "dns", Addr: server, Net: network, Name: name, Type: typ, Timeout: time.Second, Retries: 2}
}

// fromPort sends req from the agent's port, below the kernel's range of
// ephemeral ports, from which dnsmasq's queries to the upstream come.
func fromPort(req netlab.Request, port int) netlab.Request {
	req.Local = addr(sandboxV4, port)
	return req
}

func dial(host string, port int) netlab.Request {
	return netlab.Request{Op: "dial", Addr: addr(host, port)}
}

func command(argv ...string) netlab.Request { return netlab.Request{Op: "exec", Argv: argv} }

func lookPath(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return "/usr/sbin/" + name
}

// battery is the list of bypass attempts, each with the reason it fails.
func battery() []attempt {
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + ".exfil.test"
	var random []netlab.Request
	for i := range 20 {
		network := []string{"udp", "tcp"}[i%2]
		random = append(random, dnsReq(agentResolver, network, fmt.Sprintf("%016x.exfil.test", rand.Uint64()), "A"))
	}
	// The agent's PATH may lack /usr/sbin; it may run any program.
	nft, ip := lookPath("nft"), lookPath("ip")
	return []attempt{
		// DNS: every name not listed is NXDOMAIN, whoever is asked.
		{name: "UnlistedName", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "other.test", "A"), dnsReq(agentResolver, "tcp", "other.test", "AAAA")}, want: answer("NXDOMAIN")},
		{name: "RogueResolverUDP", reqs: []netlab.Request{dnsReq(rogue+":53", "udp", "allowed.test", "A")}, want: answer("NOERROR", allowedV4)},
		{name: "RogueResolverTCP", reqs: []netlab.Request{dnsReq(rogue+":53", "tcp", "allowed.test", "A")}, want: answer("NOERROR", allowedV4)},
		{name: "RogueResolverUnlistedName", reqs: []netlab.Request{dnsReq(rogue+":53", "udp", "other.test", "A"), dnsReq(rogue+":53", "tcp", "other.test", "A")}, want: answer("NXDOMAIN")},
		{name: "ResolverWithoutServer", reqs: []netlab.Request{dnsReq("198.18.7.7:53", "udp", "other.test", "A"), dnsReq(gatewayV4+":53", "tcp", "other.test", "A")}, want: answer("NXDOMAIN")},
		// From a port that dnsmasq has not used (TestLabKnownBugs/DNSFromDnsmasqPort).
		{name: "UpstreamDirectly", reqs: []netlab.Request{fromPort(dnsReq(upstream+":53", "udp", "other.test", "A"), 20053), dnsReq(upstream+":53", "tcp", "other.test", "A")}, want: answer("NXDOMAIN")},
		{name: "UpstreamOtherPortUDP", reqs: []netlab.Request{dnsReq(upstream+":5300", "udp", "other.test", "A")}, want: refused("EPERM")},
		{name: "UpstreamOtherPortTCP", reqs: []netlab.Request{dnsReq(upstream+":5300", "tcp", "other.test", "A")}, want: refused("EHOSTUNREACH")},
		{name: "IPv6ResolverUDP", reqs: []netlab.Request{dnsReq("["+rogueV6+"]:53", "udp", "allowed.test", "A")}, want: refused("EPERM")},
		{name: "IPv6ResolverTCP", reqs: []netlab.Request{dnsReq("["+rogueV6+"]:53", "tcp", "allowed.test", "A")}, want: refused("ECONNREFUSED")},
		{name: "DockerDNSPortUDP", reqs: []netlab.Request{dnsReq(dockerDNS, "udp", "other.test", "A")}, want: refused("EPERM")},
		{name: "DockerDNSPortTCP", reqs: []netlab.Request{dnsReq(dockerDNS, "tcp", "other.test", "A")}, want: refused("EHOSTUNREACH")},
		{name: "DNSOverTLS", reqs: []netlab.Request{dial(rogue, 853), dial(allowedV4, 853)}, want: refused("EHOSTUNREACH")},
		{name: "DNSOverTLSIPv6", reqs: []netlab.Request{dial(allowedV6, 853)}, want: refused("ECONNREFUSED")},
		{name: "TunnelTXT", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "6578706f7274.tunnel.test", "TXT"), dnsReq(agentResolver, "tcp", "73656372657473.tunnel.test", "TXT")}, want: answer("NXDOMAIN")},
		{name: "TunnelLongLabels", reqs: []netlab.Request{dnsReq(agentResolver, "udp", long, "A"), dnsReq(agentResolver, "tcp", long, "TXT")}, want: answer("NXDOMAIN")},
		{name: "TunnelRandomSubdomains", reqs: random, want: answer("NXDOMAIN")},
		// Listed names whose answers point into private ranges.
		{name: "NameIntoPrivateRange", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "ten.private.test", "A")}, want: rebind("ten.private.test")},
		{name: "NameIntoMetadata", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "meta.private.test", "A")}, want: rebind("meta.private.test")},
		{name: "NameIntoLoopback", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "lo.private.test", "A")}, want: rebind("lo.private.test")},
		{name: "NameIntoGateway", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "gw.private.test", "A")}, want: rebind("gw.private.test")},
		{name: "NameIntoUniqueLocalIPv6", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "ula.private.test", "AAAA")}, want: rebind("ula.private.test")},
		{name: "NameIntoLinkLocalIPv6", reqs: []netlab.Request{dnsReq(agentResolver, "udp", "ll.private.test", "AAAA")}, want: rebind("ll.private.test")},
		// dnsmasq lets 100.64.0.0/10 through and adds it to the allow set;
		// the special ranges come first in the ruleset.
		{name: "NameIntoCGNAT", setup: []netlab.Request{dnsReq(agentResolver, "udp", "cgnat.private.test", "A")}, reqs: []netlab.Request{dial(cgnatV4, 443)}, want: refused("EHOSTUNREACH")},
		// Connections.
		{name: "PrivateAddress", reqs: []netlab.Request{dial(privateV4, 443)}, want: refused("EHOSTUNREACH")},
		{name: "Metadata", reqs: []netlab.Request{dial(metadataV4, 80)}, want: refused("EHOSTUNREACH")},
		{name: "Gateway", reqs: []netlab.Request{dial(gatewayV4, 80), dial(gatewayV4, 443)}, want: refused("EHOSTUNREACH")},
		{name: "GatewayIPv6", reqs: []netlab.Request{dial(gatewayV6, 443)}, want: refused("ECONNREFUSED")},
		{name: "UnlistedAddress", reqs: []netlab.Request{dial(unlistedV4, 443), dial(rogueV4Ans, 443)}, want: refused("EHOSTUNREACH")},
		{name: "UnlistedIPv6", reqs: []netlab.Request{dial(unlistedV6, 443), dial(rogueV6, 443)}, want: refused("ECONNREFUSED")},
		{name: "UniqueLocalIPv6", reqs: []netlab.Request{dial(ulaV6, 443)}, want: refused("ECONNREFUSED")},
		{name: "AllowedHostOtherPort", setup: []netlab.Request{dnsReq(agentResolver, "udp", "allowed.test", "A")}, reqs: []netlab.Request{dial(allowedV4, 8080), dial(allowedV4, 22), dial(allowedV4, 8443)}, want: refused("EHOSTUNREACH")},
		{name: "AllowedIPv6HostOtherPort", setup: []netlab.Request{dnsReq(agentResolver, "udp", "allowed.test", "AAAA")}, reqs: []netlab.Request{dial(allowedV6, 8443)}, want: refused("ECONNREFUSED")},
		{name: "CIDROtherPort", reqs: []netlab.Request{dial(cidrHost, 443)}, want: refused("EHOSTUNREACH")},
		{name: "NextToCIDR", reqs: []netlab.Request{dial(outsideV4, 8443)}, want: refused("EHOSTUNREACH")},
		// Other protocols.
		{name: "UDP", reqs: []netlab.Request{{Op: "udp", Addr: addr(allowedV4, 443)}, {Op: "udp", Addr: addr(unlistedV4, 9999)}}, want: refused("EPERM")},
		{name: "UDPIPv6", reqs: []netlab.Request{{Op: "udp", Addr: addr(allowedV6, 443)}}, want: refused("EPERM")},
		{name: "ICMP", reqs: []netlab.Request{{Op: "icmp", Addr: allowedV4}, {Op: "icmp", Addr: gatewayV4}}, want: refused("EPERM")},
		{name: "ICMPv6", reqs: []netlab.Request{{Op: "icmp", Addr: allowedV6, Timeout: 300 * time.Millisecond}}, want: noReply},
		{name: "RawSocket", reqs: []netlab.Request{{Op: "raw", Name: "inet"}, {Op: "raw", Name: "inet6"}, {Op: "raw", Name: "packet"}}, want: refused("EPERM")},
		// The firewall itself.
		{name: "FlushRuleset", reqs: []netlab.Request{command(nft, "flush", "ruleset"), command(nft, "delete", "table", "inet", "agentbox")}, want: notPermitted},
		{name: "AddToAllowSet", reqs: []netlab.Request{command(nft, "add", "element", "inet", "agentbox", "allow_v4_443", "{ "+unlistedV4+" }")}, want: notPermitted},
		{name: "ChangeRoutes", reqs: []netlab.Request{command(ip, "link", "set", "eth0", "down"), command(ip, "route", "add", unlistedV4+"/32", "dev", "lo")}, want: notPermitted},
	}
}

// allowedZones are the names of the lab's policy.
var allowedZones = []string{"allowed.test", "private.test", "rotate.test", "v6.test", "wild.test"}

func allowedName(name string) bool {
	for _, z := range allowedZones {
		if name == z || strings.HasSuffix(name, "."+z) {
			return true
		}
	}
	return false
}

func describe(r netlab.Request) string {
	s := r.Op
	for _, f := range []string{r.Net, r.Addr, r.Type, r.Name, strings.Join(r.Argv, " ")} {
		if f != "" {
			s += " " + f
		}
	}
	return s
}

// testBlocked runs the bypass battery, then checks that nothing of it
// reached the internet, that the allow sets hold none of the addresses it
// aimed at, and that the firewall counted the rejections.
func testBlocked(t *testing.T, l *lab) {
	attempts := battery()
	if len(attempts) < 20 {
		t.Fatalf("the battery has %d attempts, want at least 20", len(attempts))
	}
	before := l.counters()
	mark := l.eventCount()
	dockerMark, err := l.docker.Call(netlab.Request{Op: "events"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			l := l.on(t)
			for _, req := range a.setup {
				l.do(req)
			}
			for _, req := range a.reqs {
				if err := a.want(l, l.do(req)); err != nil {
					t.Errorf("%s: %v", describe(req), err)
				}
			}
		})
	}

	t.Run("NothingReachedTheInternet", func(t *testing.T) {
		l := l.on(t)
		// Only the filter's own queries for listed names, to the upstream.
		for _, e := range l.events(mark) {
			if e.Kind != "dns" || e.Local != upstream+":53" || !allowedName(e.Name) {
				t.Errorf("the internet saw %+v", e)
			}
		}
		r, err := l.docker.Call(netlab.Request{Op: "events", Since: len(dockerMark.Events)})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Events {
			t.Errorf("Docker's DNS saw %+v", e)
		}
	})
	t.Run("AllowSets", func(t *testing.T) {
		l := l.on(t)
		for set, addrs := range map[string][]string{
			"allow_v4_443": {privateV4, metadataV4, "127.0.0.2", gatewayV4, unlistedV4, rogueV4Ans},
			"allow_v4_80":  {unlistedV4, metadataV4},
			"allow_v6_443": {ulaV6, "fe80::1", unlistedV6, "2001:2::66"},
		} {
			for _, a := range addrs {
				if l.setHas(set, a) {
					t.Errorf("%s holds %s", set, a)
				}
			}
		}
		if !l.setHas("allow_v4_443", cgnatV4) {
			t.Errorf("allow_v4_443 lacks %s: did dnsmasq start filtering 100.64.0.0/10? Then NameIntoCGNAT tests nothing", cgnatV4)
		}
	})
	t.Run("Counted", func(t *testing.T) {
		after := l.on(t).counters()
		for _, name := range []string{"rejected_dns", "rejected_docker_dns", "rejected_special", "rejected_other"} {
			if after[name] <= before[name] {
				t.Errorf("counter %s: %d packets before the battery, %d after; want more", name, before[name], after[name])
			}
		}
	})
}

// testAudit checks that a blocked lookup and a rejected connection show in
// what `docker compose logs egress` prints (the entrypoint's stdout and
// stderr: dnsmasq's query log, the counters when it stops) and in the
// counters that `nft list counters` prints.
func testAudit(t *testing.T, l *lab) {
	log := l.egress.Log()
	mark := len(log.Lines())
	before := l.counters()

	if r := l.do(dnsReq(agentResolver, "udp", "audit.blocked.test", "A")); r.Rcode != "NXDOMAIN" {
		t.Fatalf("audit.blocked.test: %v", r)
	}
	for _, want := range []string{
		"query[A] audit.blocked.test from ", // 127.0.0.1: the redirect's source
		"config audit.blocked.test is NXDOMAIN",
	} {
		if _, _, ok := log.Await(mark, want, 5*time.Second); !ok {
			t.Errorf("the log lacks %q:\n%s", want, l.egress.Output())
		}
	}

	if r := l.do(dial(unlistedV4, 443)); r.Errno != "EHOSTUNREACH" {
		t.Fatalf("connecting to %s: %v", unlistedV4, r)
	}
	listing := l.nft("list", "counters", "table", "inet", "agentbox")
	if !strings.Contains(listing, "counter rejected_other {") || !strings.Contains(listing, `comment "everything else not allowed"`) {
		t.Errorf("nft list counters prints:\n%s", listing)
	}
	after := l.counters()
	if after["rejected_other"] != before["rejected_other"]+1 {
		t.Errorf("rejected_other went from %d to %d packets, want one more", before["rejected_other"], after["rejected_other"])
	}

	// When the firewall stops, it prints the counters.
	if code := l.egress.Stop(5 * time.Second); code != 0 {
		t.Errorf("the entrypoint exited with %d on SIGTERM, want 0", code)
	}
	m := regexp.MustCompile(`agentbox-egress: rejected packets: dns=(\d+) docker_dns=(\d+) special=(\d+) other=(\d+)`).FindStringSubmatch(l.egress.Output())
	if m == nil {
		t.Fatalf("no counters in the log:\n%s", l.egress.Output())
	}
	if other, _ := strconv.Atoi(m[4]); other < after["rejected_other"] {
		t.Errorf("the log says other=%s, nft said %d", m[4], after["rejected_other"])
	}
}

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
	t.Run("DnsmasqCannotStart", func(t *testing.T) {
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
	})
	t.Run("RulesetFailsToLoad", func(t *testing.T) {
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
	})
	t.Run("DnsmasqKilled", func(t *testing.T) {
		l := newLab(t)
		p := l.startReady()
		l.resolve("allowed.test", "A")
		if r := l.do(netlab.Request{Op: "open", ID: "held", Addr: addr(allowedV4, 443)}); !r.OK {
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
	})
	t.Run("RunTwice", func(t *testing.T) {
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
		p = l.startReady()
		if n := strings.Count(l.nft("list", "tables"), "table inet agentbox"); n != 1 {
			t.Errorf("%d tables inet agentbox after a restart, want 1", n)
		}
		l.healthy(p)
		l.works()
	})
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

// TestLabConntrack covers two bypasses the lab found in an earlier firewall,
// both from one cause: dnsmasq's queries to the upstream and the agent's DNS
// packets share connection tracking, and conntrack cannot tell two sockets
// with the same addresses and ports apart. A UDP packet that matches an
// existing entry takes that entry's NAT (or none) and would pass "ct state
// established,related accept". The firewall now rejects DNS of other uids
// that is not for the filter resolver before that rule, and dnsmasq queries
// from ports (firewall.DNSMinPort-DNSMaxPort) outside the kernel's
// ephemeral range, from which the agent's DNS is refused.
func TestLabConntrack(t *testing.T) {
	// The agent sends DNS from the source port of one of dnsmasq's queries
	// to the upstream. The packet matches dnsmasq's conntrack entry, so it
	// is not redirected; had it passed as established, the agent would ask
	// the upstream directly, any name, any type (under Docker: 127.0.0.1:PORT
	// to 127.0.0.11:53). It must be refused before it leaves.
	t.Run("DNSFromDnsmasqPort", func(t *testing.T) {
		l := newLab(t)
		l.startReady()
		mark := l.eventCount()
		l.resolve("port.wild.test", "A") // dnsmasq asks the upstream
		var port int
		for _, e := range l.events(mark) {
			if e.Kind == "dns" && e.Name == "port.wild.test" {
				port, _ = strconv.Atoi(e.Remote[strings.LastIndex(e.Remote, ":")+1:])
			}
		}
		if port == 0 {
			t.Fatal("the upstream saw no query for port.wild.test")
		}
		if port < firewall.DNSMinPort || port > firewall.DNSMaxPort {
			t.Errorf("dnsmasq queried from port %d, outside %d-%d", port, firewall.DNSMinPort, firewall.DNSMaxPort)
		}
		mark = l.eventCount()
		r := l.do(fromPort(netlab.Request{Op: "dns", Addr: upstream + ":53", Name: "secret.exfil.test", Type: "A"}, port))
		if r.OK || r.Errno != "EPERM" {
			t.Errorf("a lookup of an unlisted name from dnsmasq's port %d: %+v, want EPERM", port, r)
		}
		for _, e := range l.events(mark) {
			t.Errorf("the upstream saw %+v", e)
		}
	})
	// Were dnsmasq to send a query from a source port that one of the
	// agent's lookups used in the last 30 s, the query would match the
	// agent's entry, whose NAT is the redirect to 127.0.0.1:53, and come back
	// to dnsmasq as a client query. dnsmasq forwards it again, from the same port: the
	// query loops inside dnsmasq, thousands of times a second, each time
	// two lines in the log, and the name gets no answer. It takes the agent
	// asking the address that dnsmasq forwards to, which is what happens
	// under Docker, where both use 127.0.0.11 (here the agent asks the
	// upstream's address). With N lookups in the last 30 s, each forwarded
	// lookup loops with a chance of about N in 28232 (the ephemeral ports).
	t.Run("ForwardLoops", func(t *testing.T) {
		l := newLab(t)
		l.startReady()
		l.resolve("allowed.test", "A")
		// 3000 lookups of a cached name, each from a new port: 3000 entries.
		if r := l.do(netlab.Request{Op: "dnsbench", Addr: upstream + ":53", Name: "allowed.test", Type: "A", Count: 3000, NewSocket: true, Timeout: time.Second}); !r.OK {
			t.Fatalf("cached lookups: %v", r)
		}
		// 300 forwarded lookups: about 30 would loop.
		r := l.do(netlab.Request{Op: "dnsbench", Addr: upstream + ":53", Name: "loop-%d.wild.test", Type: "A", Count: 300, NewSocket: true, Timeout: 300 * time.Millisecond})
		if r.OK {
			return
		}
		m := regexp.MustCompile(`\((loop-\d+\.wild\.test)\)`).FindStringSubmatch(r.Err)
		if m == nil {
			t.Fatalf("lookups of listed names: %v", r)
		}
		// The agent's resolver tries again, as resolvers do.
		retry := dnsReq(agentResolver, "udp", m[1], "A")
		retry.Timeout, retry.Retries = 500*time.Millisecond, 5
		again := l.do(retry)
		outcome := "an answer"
		if !again.OK {
			outcome = "no answer (" + again.Errno + ")"
		}
		received := 0
		for _, line := range l.egress.Log().Lines() {
			if strings.Contains(line.Text, "query[A] "+m[1]+" from ") {
				received++
			}
		}
		t.Errorf("%d of 300 lookups of listed names answered; %s got none, and %s in %d more tries of 0.5 s; by then dnsmasq had received a query for it %d times (and %d log lines more were not kept)",
			len(r.Samples), m[1], outcome, again.Tries, received, l.egress.Log().Dropped())
	})
}
