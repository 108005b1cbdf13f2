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
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	_ "github.com/agentbox-dev/agentbox/internal/testing/golden" // the shared -update flag
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// TestLabHelper is the entry point of the lab's helper processes (the fake
// internet, the agent); in a normal run it does nothing.
func TestLabHelper(t *testing.T) { netlab.HelperMain() }

func requireLab(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t)
	for _, p := range []string{"ip", "nft", "dnsmasq", "setpriv", "unshare", "nsenter", "mount", "bash", "flock"} {
		testenv.RequireProgram(t, p)
	}
}

// generated returns the egress files that `agentbox generate` writes for
// testdata/lab, keyed by their names (rules.nft, policy.bash, entrypoint.sh...).
func generated(t testing.TB) map[string][]byte {
	t.Helper()
	c, err := generator.Compile("testdata/lab", generator.CompileOptions{CheckMounts: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, path := range []string{generator.EgressDir + "/rules.nft", generator.EgressDir + "/dnsmasq.conf", generator.EgressDir + "/policy.bash",
		generator.EgressProgramDir + "/entrypoint.sh", generator.EgressProgramDir + "/common.nft", generator.EgressProgramDir + "/ulogd.conf",
		generator.EgressProgramDir + "/dnsmasq-common.conf", generator.EgressProgramDir + "/haproxy-common.cfg"} {
		data, ok := c.Files[path]
		if !ok {
			t.Fatalf("generator.Compile rendered no %s", path)
		}
		out[path[strings.LastIndex(path, "/")+1:]] = data
	}
	if data, ok := c.Files[generator.EgressDir+"/haproxy.cfg"]; ok { // the gateway
		out["haproxy.cfg"] = data
	}
	return out
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

// inlined is rules, a rules.nft of l's, with common.nft in place of its
// include, as nft reads it: what a test loads outside the lab's mounts (ip
// netns exec), where the include's path leads nowhere.
func (l *lab) inlined(rules []byte) []byte {
	l.t.Helper()
	include := []byte("\tinclude \"" + firewall.CommonPath + "\"\n")
	if bytes.Count(rules, include) != 1 {
		l.t.Fatalf("rules.nft does not include %s once", firewall.CommonPath)
	}
	return bytes.Replace(rules, include, l.files["common.nft"], 1)
}

// loadTable loads the ruleset at path (a rules.nft of l's with its
// include inlined: inlined) in the sandbox's namespace in place of its
// table, with the upstream resolver and allowed.test's address in their
// sets: the entrypoint's load, without the entrypoint.
func (l *lab) loadTable(path string) {
	l.t.Helper()
	script := fmt.Sprintf("table inet agentbox\ndelete table inet agentbox\ninclude %q\nadd element inet agentbox upstream_v4 { %s }\nadd element inet agentbox allow_v4_443 { %s }\n", path, upstream, allowedV4)
	cmd := exec.Command("ip", "netns", "exec", l.sbx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		l.t.Fatalf("loading %s: %v\n%s", path, err, out)
	}
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
	for _, a := range append([]string{upstream, rogue, allowedV4, wildV4, unlistedV4, cidrHost, cidrHost2, outsideV4, privateV4, metadataV4, cgnatV4, mixedV4, neverV4, neverNamed, neverBelow, besideNever}, rotating...) {
		hosts = append(hosts, "addr add "+a+"/32 dev lo")
	}
	for _, a := range []string{allowedV6, "2001:2::20", unlistedV6, v6Only, rogueV6, ulaV6, nat64V6, sixTo4V6, compatV6, publicNAT64V6, routedV6, neverV6, neverNAT64, never6to4, neverNamedV6, neverBelowV6} {
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
	spec := netlab.Spec{
		Files: map[string]netlab.File{
			firewall.RulesPath:         {Data: l.files["rules.nft"], Mode: 0o644},
			firewall.DnsmasqPath:       {Data: l.files["dnsmasq.conf"], Mode: 0o644},
			firewall.EntrypointPath:    {Data: l.files["entrypoint.sh"], Mode: 0o755},
			firewall.UlogdPath:         {Data: l.files["ulogd.conf"], Mode: 0o644},
			firewall.PolicyPath:        {Data: l.files["policy.bash"], Mode: 0o644},
			firewall.CommonPath:        {Data: l.files["common.nft"], Mode: 0o644},
			firewall.DnsmasqCommonPath: {Data: l.files["dnsmasq-common.conf"], Mode: 0o644},
			"/etc/resolv.conf":         {Data: []byte("nameserver " + upstream + "\n"), Mode: 0o644},
			"/etc/passwd": {Data: withUser(l.t, "/etc/passwd",
				fmt.Sprintf("%s:x:%d:%d::/nonexistent:/usr/sbin/nologin", firewall.DNSUser, firewall.DNSUID, firewall.DNSUID)), Mode: 0o644},
			"/etc/group": {Data: withUser(l.t, "/etc/group", fmt.Sprintf("%s:x:%d:", firewall.DNSUser, firewall.DNSUID)), Mode: 0o644},
		},
		Tmpfs: []string{"/run", "/tmp"},
		Caps:  egressCaps,
		// agentbox up and run always set the host's addresses: none here.
		Argv: []string{"env", firewall.HostAddrsEnv + "=", firewall.EntrypointPath},
	}
	if cfg, ok := l.files["haproxy.cfg"]; ok { // the gateway (lab_gateway_test.go)
		spec.Files[firewall.GatewayConfigPath] = netlab.File{Data: cfg, Mode: 0o644}
		spec.Files[firewall.GatewayCommonPath] = netlab.File{Data: l.files["haproxy-common.cfg"], Mode: 0o644}
	}
	return spec
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
