package firewall_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
	"go.yaml.in/yaml/v3"
)

// dockerResolverPorts are where the lab's Docker-like resolver listens,
// behind the DNAT from port 53: Docker picks a random port for UDP and
// another one for TCP.
var dockerResolverPorts = map[string]int{"udp": 5302, "tcp": 5303}

// dockerAcceptAfter is how long a TCP connection to the lab's Docker-like
// resolver waits before the resolver accepts it. dockerd accepts late
// enough that the kernel acknowledges dnsmasq's query first, from a socket
// no process holds yet, whose packets have no owner (meta skuid).
const dockerAcceptAfter = 100 * time.Millisecond

// dockerLab says how newDockerLab builds the lab.
type dockerLab struct {
	upstream string              // the upstream resolver's address, on loopback
	rules    func(string) string // if set, changes rules.nft
	sysctls  map[string]string   // compose's sysctls for the egress service, set after Docker's
	forward  bool                // the resolver forwards to the lab's upstream, as root, as Docker's does
}

// newDockerLab builds the lab as Docker sets up the egress container's
// network namespace, with upstreamIP, a loopback address, as the upstream
// resolver: resolv.conf names it, its resolver (root, like dockerd's
// embedded DNS) listens on another port, and nat rules like Docker's send
// port 53 there. Docker also sets net.ipv4.ip_unprivileged_port_start to 0
// unless compose sets it: every uid may bind any port. The firewall runs.
func newDockerLab(t *testing.T, upstreamIP string) (*lab, *netlab.Helper) {
	t.Helper()
	return dockerLab{upstream: upstreamIP}.build(t)
}

func (d dockerLab) build(t *testing.T) (*lab, *netlab.Helper) {
	t.Helper()
	l := newLab(t)
	if d.rules != nil {
		l.files["rules.nft"] = []byte(d.rules(string(l.inlined(l.files["rules.nft"]))))
	}
	resolver, err := l.lab.StartHelper(l.sbx, "server", 0)
	if err != nil {
		t.Fatal(err)
	}
	dns := netlab.DNSServer{Listen: []string{addr(d.upstream, dockerResolverPorts["udp"]), addr(d.upstream, dockerResolverPorts["tcp"])}, Records: upstreamRecords,
		AcceptAfter: dockerAcceptAfter}
	if d.forward {
		dns.Forward = addr(upstream, 53)
	}
	l.serve(resolver, &netlab.ServerConfig{DNS: []netlab.DNSServer{dns}})
	l.dockerNAT(d.upstream)
	l.lab.Sysctl(l.sbx, "net/ipv4/ip_unprivileged_port_start", "0")
	for key, value := range d.sysctls {
		l.lab.Sysctl(l.sbx, strings.ReplaceAll(key, ".", "/"), value)
	}
	spec := l.egressSpec()
	spec.Files["/etc/resolv.conf"] = netlab.File{Data: []byte("nameserver " + d.upstream + "\n"), Mode: 0o644}
	l.ready(l.start(spec))
	return l, resolver
}

// dockerNAT loads nat rules like those Docker adds for 127.0.0.11 (iptables
// DOCKER_OUTPUT and DOCKER_POSTROUTING, priorities -100 and 100) for ip.
// As Docker's, the SNAT of the resolver's port back to 53 applies only to
// packets to ip itself (POSTROUTING -d 127.0.0.11 -j DOCKER_POSTROUTING):
// the answers to dnsmasq, from ip to 127.0.0.1, get port 53 back only
// through their flow's DNAT.
func (l *lab) dockerNAT(ip string) {
	l.t.Helper()
	family, match, to := "ip", "ip", ip
	if strings.Contains(ip, ":") {
		family, match, to = "ip6", "ip6", "["+ip+"]"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "table %s dockerlike {\n", family)
	b.WriteString("\tchain output {\n\t\ttype nat hook output priority -100; policy accept;\n")
	for _, proto := range []string{"udp", "tcp"} {
		fmt.Fprintf(&b, "\t\t%s daddr %s %s dport 53 dnat to %s:%d\n", match, ip, proto, to, dockerResolverPorts[proto])
	}
	b.WriteString("\t}\n\tchain postrouting {\n\t\ttype nat hook postrouting priority 100; policy accept;\n")
	for _, proto := range []string{"udp", "tcp"} {
		fmt.Fprintf(&b, "\t\t%s daddr %s %s saddr %s %s sport %d snat to %s:53\n", match, ip, match, ip, proto, dockerResolverPorts[proto], to)
	}
	b.WriteString("\t}\n}\n")
	file := filepath.Join(l.lab.Dir(), "dockerlike.nft")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		l.t.Fatal(err)
	}
	if _, err := l.lab.Exec(l.sbx, "nft", "-f", file); err != nil {
		l.t.Fatal(err)
	}
}

// loopbackOf is the loopback address of ip's family: where dnsmasq's
// queries to a loopback upstream come from.
func loopbackOf(ip string) string {
	if netip.MustParseAddr(ip).Is6() {
		return "::1"
	}
	return "127.0.0.1"
}

// forged is what the agent answers when a query of dnsmasq's reaches it.
var forged = []netlab.Record{
	{Name: "*", Type: "A", Values: []string{unlistedV4}, TTL: 60},
	{Name: "*", Type: "AAAA", Values: []string{unlistedV6}, TTL: 60},
}

// TestLabUpstreamSpoof reproduces a bypass found in a lab like Docker's,
// where the upstream resolver is on loopback (127.0.0.11) behind a DNAT
// and every uid may bind low ports. The agent binds the upstream's address
// and port 53 (nothing holds it: the resolver listens on another port) and
// sends a datagram from there to every port dnsmasq queries from.
// Conntrack records each as a flow whose reply direction is exactly a query
// of dnsmasq's from that port: dnsmasq's next query then matches it, skips
// Docker's DNAT, passes as established and reaches the agent, whose answer
// (any address, for a fresh name under an allowed domain) enters the allow
// set, and the agent connects to it.
//
// The variants:
//   - OtherLoopback: any loopback upstream, not only Docker's.
//   - TCP: dnsmasq forwards a lookup over TCP from an ephemeral port. The
//     agent leaves a SYN from the upstream's port 53 unanswered on each, and
//     dnsmasq's SYN then skips the DNAT too; the lookup fails (the agent's
//     listener's SYN-ACK is not the continuation of its SYN and conntrack
//     drops it), which an agent that kept each SYN's socket open could turn
//     into a simultaneous open, its own answer again.
//   - IPv6: with an upstream on ::1, dnsmasq queries from ::1 as well, so the
//     agent's datagrams go to an upstream's address, which the firewall
//     refused before this bypass was found; kept so that it stays refused.
func TestLabUpstreamSpoof(t *testing.T) {
	for _, tc := range []struct{ name, upstream, net string }{
		{"Docker", "127.0.0.11", "udp"},
		{"TCP", "127.0.0.11", "tcp"},
		{"OtherLoopback", "127.0.0.53", "udp"},
		{"IPv6", "::1", "udp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, resolver := newDockerLab(t, tc.upstream)
			testSpoof(t, l, resolver, tc.upstream, tc.net)
		})
	}
}

// TestLabUpstreamSpoofLayers checks that each of the two layers that stop
// TestLabUpstreamSpoof's attack stops it alone: the rules that refuse other
// uids' packets from an upstream's address or port 53 (the guard), and the
// conntrack zone of dnsmasq's flows, which other uids' flows never match.
func TestLabUpstreamSpoofLayers(t *testing.T) {
	guardless := func(rules string) string {
		return withoutLines(t, rules, `counter name "rejected_spoof" goto refuse`, 4)
	}
	zoneless := func(rules string) string { return withoutLines(t, rules, "ct zone set", 10) }
	for _, tc := range []struct {
		name, net string
		edit      func(string) string
	}{
		{"ZoneAlone", "udp", guardless},
		{"ZoneAloneTCP", "tcp", guardless},
		{"GuardAlone", "udp", zoneless},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, resolver := dockerLab{upstream: "127.0.0.11", rules: tc.edit}.build(t)
			testSpoof(t, l, resolver, "127.0.0.11", tc.net)
		})
	}
}

// TestLabNoLowPorts: as defence in depth, the compose file sets
// net.ipv4.ip_unprivileged_port_start back to the kernel's 1024 on the
// egress service (Docker sets 0 unless told), so that the agent, which
// shares its network namespace, cannot bind port 53 at all. The entrypoint
// warns when it finds the limit at 53 or below.
func TestLabNoLowPorts(t *testing.T) {
	sysctls := composeSysctls(t)
	if got := sysctls["net.ipv4.ip_unprivileged_port_start"]; got != "1024" {
		t.Errorf("the egress service's sysctls set net.ipv4.ip_unprivileged_port_start to %q, want 1024", got)
	}
	l, _ := dockerLab{upstream: "127.0.0.11", sysctls: sysctls}.build(t)
	for _, network := range []string{"udp", "tcp"} {
		r := l.do(netlab.Request{Op: "spoof", Net: network, Local: "127.0.0.11:53", Addr: "127.0.0.1", Ports: "61000"})
		if r.Errno != "EACCES" {
			t.Errorf("%s from 127.0.0.11:53: %v, want EACCES", network, r)
		}
	}
	if strings.Contains(l.egress.Output(), "ip_unprivileged_port_start") {
		t.Errorf("the entrypoint warns about low ports:\n%s", l.egress.Output())
	}

	docker, _ := newDockerLab(t, "127.0.0.11") // without compose's sysctls
	want := "agentbox-egress: warning: net.ipv4.ip_unprivileged_port_start is 0: every uid may bind port 53"
	if !strings.Contains(docker.egress.Output(), want) {
		t.Errorf("the entrypoint's output lacks %q:\n%s", want, docker.egress.Output())
	}
}

// composeSysctls returns the sysctls of the egress service of the compose
// file that `agentbox generate` writes for testdata/lab.
func composeSysctls(t *testing.T) map[string]string {
	t.Helper()
	c, err := generator.Compile("testdata/lab", generator.CompileOptions{CheckMounts: true})
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Sysctls map[string]any `yaml:"sysctls"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(c.Files[generator.ComposeFile], &compose); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range compose.Services["egress"].Sysctls {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// withoutLines removes the lines of rules that contain s, which must be n.
func withoutLines(t *testing.T, rules, s string, n int) string {
	t.Helper()
	var kept []string
	for _, line := range strings.SplitAfter(rules, "\n") {
		if !strings.Contains(line, s) {
			kept = append(kept, line)
		}
	}
	if removed := len(strings.SplitAfter(rules, "\n")) - len(kept); removed != n {
		t.Fatalf("rules.nft has %d lines with %q, want %d", removed, s, n)
	}
	return strings.Join(kept, "")
}

// testSpoof makes the attack over network (udp or tcp) on a Docker-like lab
// whose upstream is upstreamIP, and checks that a fresh allowed name gets
// the resolver's answer. dnsmasq queries over UDP from its own port range,
// over TCP (for a lookup over TCP) from the kernel's ephemeral ports, where
// each of the agent's SYNs is left unanswered.
func testSpoof(t *testing.T, l *lab, resolver *netlab.Helper, upstreamIP, network string) {
	ports := fmt.Sprintf("%d-%d", firewall.DNSMinPort, firewall.DNSMaxPort)
	if network == "tcp" {
		ports = l.ephemeralPorts()
	}
	// Timeout bounds the helper's answer only: over TCP the 28,000 SYNs
	// take 8 s on a quiet machine, near the default of 10.
	spoof := netlab.Request{Op: "spoof", Net: network, ID: "upstream", Local: addr(upstreamIP, 53), Addr: loopbackOf(upstreamIP),
		Ports: ports, Records: forged, Timeout: 30 * time.Second}
	r := l.do(spoof)
	t.Logf("%s over %s from %s to %s port %s: %v", spoof.Op, network, spoof.Local, spoof.Addr, ports, r)
	name := "spoof.wild.test"
	lookup := dnsReq(agentResolver, network, name, "A")
	if network == "tcp" {
		// From a port below the ephemeral range, whose flows the SYNs
		// above took.
		lookup.Local, lookup.Retries = addr("127.0.0.1", 20053), 0
	}
	if got := l.do(lookup); !got.OK || strings.Join(got.Answers, ",") != wildV4 {
		t.Errorf("%s: %v, want the resolver's %s", name, got, wildV4)
	}
	if got := l.do(netlab.Request{Op: "spoofed", ID: "upstream"}); len(got.Events) > 0 {
		t.Errorf("dnsmasq's queries reached the agent's socket: %+v", got.Events)
	}
	if l.setHas("allow_v4_443", unlistedV4) {
		t.Errorf("allow_v4_443 holds %s, the agent's answer", unlistedV4)
	}
	l.refuses(unlistedV4, 443)
	seen, err := resolver.Call(netlab.Request{Op: "events"})
	if err != nil {
		t.Fatal(err)
	}
	asked := false
	for _, e := range seen.Events {
		asked = asked || e.Name == name
	}
	if !asked {
		t.Errorf("the resolver never saw dnsmasq's query for %s", name)
	}
}

// ephemeralPorts returns the sandbox's range of ephemeral ports as
// "FIRST-LAST".
func (l *lab) ephemeralPorts() string {
	l.t.Helper()
	out, err := l.lab.Exec(l.sbx, "cat", "/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		l.t.Fatal(err)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		l.t.Fatalf("ip_local_port_range is %q", out)
	}
	return f[0] + "-" + f[1]
}
