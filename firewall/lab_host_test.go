package firewall_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
)

// The host, as the sandbox sees it on a machine with public addresses: its
// gateway on a public-looking network, and another address of its own.
const (
	hostGatewayV4 = "198.18.200.1"
	hostSandboxV4 = "198.18.200.2"
	hostGatewayV6 = "2001:2:0:200::1"
	hostSandboxV6 = "2001:2:0:200::2"
	hostPublicV4  = "198.18.201.1" // another address of the host
	hostPublicV6  = "2001:2::201"
)

// TestLabHostAddrs: under mode open, where every public address passes, the
// host is refused on its gateway addresses (IPv4 and IPv6, which the
// entrypoint reads from the routes) and on the addresses agentbox gives it
// (firewall.HostAddrsEnv), unless a CIDR lists one, on its ports; other
// public addresses still connect.
func TestLabHostAddrs(t *testing.T) {
	policy := openPolicy
	policy.CIDRs = append(policy.CIDRs[:len(policy.CIDRs):len(policy.CIDRs)],
		firewall.CIDR{Prefix: netip.MustParsePrefix(hostPublicV4 + "/32"), Ports: []uint16{8443}, Sources: []string{"lab"}})
	l := newModeLab(t, policy)
	l.lab.IP(l.net, "addr add "+hostGatewayV4+"/24 dev eth0", "addr add "+hostGatewayV6+"/64 dev eth0 nodad",
		"addr add "+hostPublicV4+"/32 dev lo", "addr add "+hostPublicV6+"/128 dev lo nodad")
	l.lab.IP(l.sbx, "addr add "+hostSandboxV4+"/24 dev eth0", "addr add "+hostSandboxV6+"/64 dev eth0 nodad",
		"route replace default via "+hostGatewayV4, "route replace ::/0 via "+hostGatewayV6)
	host := []string{hostGatewayV4, hostGatewayV6, hostPublicV4, hostPublicV6}
	t.Run("WithoutFirewall", func(t *testing.T) {
		l := l.on(t)
		for _, a := range host {
			l.connects(a, 443)
		}
	})
	spec := l.egressSpec()
	// Spaces (agentbox up and run) or commas (Kubernetes' status.hostIPs)
	// separate the addresses.
	spec.Argv = []string{"env", firewall.HostAddrsEnv + "=" + hostPublicV4 + "," + hostPublicV6 + " not-an-address", firewall.EntrypointPath}
	p := l.start(spec)
	l.ready(p)
	if !strings.Contains(p.Output(), "ignoring 'not-an-address'") {
		t.Errorf("the entrypoint did not say it ignored a malformed address:\n%s", p.Output())
	}
	t.Run("HostRefused", func(t *testing.T) {
		l := l.on(t)
		for _, a := range host {
			l.refuses(a, 443)
		}
		l.refuses(hostGatewayV4, 22)
	})
	t.Run("ListedCIDR", func(t *testing.T) {
		l := l.on(t)
		l.connects(hostPublicV4, 8443)
		l.refuses(hostPublicV4, 8080)
	})
	t.Run("OtherPublic", func(t *testing.T) {
		l := l.on(t)
		l.connects(unlistedV4, 443)
		l.connects(unlistedV6, 443)
	})
	l.healthy(p)
}

// TestLabOpenNeedsHostAddrs: a sandbox of mode open started without the
// host's addresses (a Dev Container, compose by hand: nobody set
// firewall.HostAddrsEnv) would reach the host's public addresses, which
// nothing in the namespace can tell. It does not start; set and empty (a
// host with no global address) it does.
func TestLabOpenNeedsHostAddrs(t *testing.T) {
	l := newModeLab(t, openPolicy)
	spec := l.egressSpec()
	spec.Argv = []string{firewall.EntrypointPath}
	p := l.start(spec)
	if _, _, ok := p.Log().Await(0, "agentbox-egress: error: mode open needs the host's addresses", 10*time.Second); !ok {
		t.Fatalf("the entrypoint of mode open started without the host's addresses; its output:\n%s", p.Output())
	}
	time.Sleep(500 * time.Millisecond)
	if strings.Contains(p.Output(), "agentbox-egress: ready (") {
		t.Fatalf("the entrypoint got ready without the host's addresses:\n%s", p.Output())
	}
	l.ready(l.start(l.egressSpec()))
}
