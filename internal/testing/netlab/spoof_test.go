package netlab_test

import (
	"slices"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// TestSpoofAndRouting checks the agent's attempts that pose as another host
// (spoof) and that route through an IPv6 routing header, without any
// firewall.
func TestSpoofAndRouting(t *testing.T) {
	requireLab(t)
	lab := netlab.New(t, "TestNetlabHelper")
	a, b := lab.Namespace("a"), lab.Namespace("b")
	lab.Veth(a, "eth0", b, "eth0")
	lab.IP(a, "addr add 2001:2::2/64 dev eth0 nodad")
	lab.IP(b, "addr add 2001:2::1/64 dev eth0 nodad", "addr add 2001:2::3/128 dev lo nodad")
	// b follows segment routing headers that arrive on eth0.
	lab.Sysctl(b, "net/ipv6/conf/all/seg6_enabled", "1")
	lab.Sysctl(b, "net/ipv6/conf/eth0/seg6_enabled", "1")
	server, err := lab.StartHelper(b, "server", 0)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := server.Call(netlab.Request{Op: "start", Server: &netlab.ServerConfig{TCP: []string{"[::]:443"}}}); err != nil || !r.OK {
		t.Fatalf("start: %v %v", r, err)
	}
	agent, err := lab.StartHelper(a, "agent", 1000)
	if err != nil {
		t.Fatal(err)
	}
	call := func(req netlab.Request) netlab.Response {
		t.Helper()
		r, err := agent.Call(req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// From 127.0.0.2:5300 to ten ports of 127.0.0.1; the socket then
	// answers a query sent to it.
	r := call(netlab.Request{Op: "spoof", ID: "s", Local: "127.0.0.2:5300", Addr: "127.0.0.1", Ports: "40000-40009",
		Records: []netlab.Record{{Name: "*", Type: "A", Values: []string{"198.18.9.9"}}}})
	if !r.OK || r.Data != "sent 10" {
		t.Errorf("spoof over UDP: %v, want sent 10", r)
	}
	if r := call(netlab.Request{Op: "dns", Addr: "127.0.0.2:5300", Name: "x.test", Type: "A"}); !slices.Equal(r.Answers, []string{"198.18.9.9"}) {
		t.Errorf("the spoofing socket's answer: %v", r)
	}
	if r := call(netlab.Request{Op: "spoofed", ID: "s"}); len(r.Events) != 1 || r.Events[0].Name != "x.test" {
		t.Errorf("spoofed: %v, want the query for x.test", r)
	}
	// Over TCP: ten SYNs that nothing answers, then a listener.
	r = call(netlab.Request{Op: "spoof", Net: "tcp", ID: "t", Local: "127.0.0.2:5300", Addr: "127.0.0.1", Ports: "40000-40009",
		Records: []netlab.Record{{Name: "*", Type: "A", Values: []string{"198.18.9.8"}}}})
	if !r.OK || r.Data != "syn-sent 10" {
		t.Errorf("spoof over TCP: %v, want syn-sent 10", r)
	}
	if r := call(netlab.Request{Op: "dns", Net: "tcp", Addr: "127.0.0.2:5300", Name: "y.test", Type: "A"}); !slices.Equal(r.Answers, []string{"198.18.9.8"}) {
		t.Errorf("the spoofing listener's answer: %v", r)
	}
	if r := call(netlab.Request{Op: "spoofed", ID: "t"}); len(r.Events) != 1 || r.Events[0].Name != "y.test" {
		t.Errorf("spoofed: %v, want the query for y.test", r)
	}
	// Port 53 needs privilege (net.ipv4.ip_unprivileged_port_start).
	if r := call(netlab.Request{Op: "spoof", Local: "127.0.0.2:53", Addr: "127.0.0.1", Ports: "40000"}); r.Errno != "EACCES" {
		t.Errorf("spoof from port 53: %v, want EACCES", r)
	}

	// Through 2001:2::1 to 2001:2::3 with a segment routing header; type 0
	// is refused by the kernel.
	r = call(netlab.Request{Op: "dial", Addr: "[2001:2::3]:443", Routing: &netlab.Routing{Type: 4, Hops: []string{"2001:2::1"}}})
	if r.Data != "hello [2001:2::3]:443" {
		t.Errorf("dial through a segment routing header: %v", r)
	}
	r = call(netlab.Request{Op: "dial", Addr: "[2001:2::3]:443", Routing: &netlab.Routing{Type: 0, Hops: []string{"2001:2::1"}}})
	if r.Errno != "EINVAL" {
		t.Errorf("dial through a type 0 routing header: %v, want EINVAL", r)
	}
}
