package netlab_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// TestNetlabHelper is the helper processes' entry point; in a normal run it
// does nothing.
func TestNetlabHelper(t *testing.T) { netlab.HelperMain() }

func requireLab(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	for _, p := range []string{"ip", "unshare", "nsenter", "setpriv", "mount"} {
		testenv.RequireProgram(t, p)
	}
}

// TestLab builds two namespaces joined by a veth pair and checks every kind
// of attempt an unprivileged agent makes against a server, then that the
// lab leaves nothing behind.
func TestLab(t *testing.T) {
	requireLab(t)
	var namespaces []string
	t.Run("lab", func(t *testing.T) {
		lab := netlab.New(t, "TestNetlabHelper")
		a, b := lab.Namespace("a"), lab.Namespace("b")
		namespaces = []string{a, b}
		lab.Veth(a, "eth0", b, "eth0")
		lab.IP(a, "addr add 198.18.0.2/24 dev eth0", "addr add 2001:2::2/64 dev eth0 nodad")
		lab.IP(b, "addr add 198.18.0.1/24 dev eth0", "addr add 2001:2::1/64 dev eth0 nodad")
		lab.Sysctl(a, "net/ipv4/ping_group_range", "0 2147483647")

		server, err := lab.StartHelper(b, "server", 0)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := server.Call(netlab.Request{Op: "start", Server: &netlab.ServerConfig{
			DNS: []netlab.DNSServer{{Listen: []string{"198.18.0.1:53"}, Records: []netlab.Record{
				{Name: "host.test", Type: "A", Values: []string{"198.18.0.1"}},
			}}},
			TCP:  []string{"0.0.0.0:443", "[::]:443"},
			HTTP: []string{"0.0.0.0:80"},
			UDP:  []string{"0.0.0.0:9999"},
		}}); err != nil || !r.OK {
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
		if r := call(netlab.Request{Op: "ping"}); r.Data != "uid 1000" {
			t.Errorf("agent runs as %q, want uid 1000", r.Data)
		}
		if r := call(netlab.Request{Op: "dns", Addr: "198.18.0.1:53", Net: "tcp", Name: "host.test", Type: "A"}); r.Rcode != "NOERROR" || strings.Join(r.Answers, ",") != "198.18.0.1" {
			t.Errorf("dns over TCP: %v", r)
		}
		if r := call(netlab.Request{Op: "dns", Addr: "198.18.0.1:53", Name: "other.test", Type: "A"}); r.Rcode != "NXDOMAIN" {
			t.Errorf("dns over UDP: %v", r)
		}
		if r := call(netlab.Request{Op: "dial", Addr: "[2001:2::1]:443"}); r.Data != "hello [2001:2::1]:443" {
			t.Errorf("dial: %v", r)
		}
		if r := call(netlab.Request{Op: "dial", Addr: "198.18.0.1:444", Timeout: time.Second}); r.Errno != "ECONNREFUSED" {
			t.Errorf("dial a closed port: %v, want ECONNREFUSED", r)
		}
		if r := call(netlab.Request{Op: "http", URL: "http://host.test/", Resolver: "198.18.0.1:53"}); r.Data != "hello http 198.18.0.1:80" {
			t.Errorf("http: %v", r)
		}
		if r := call(netlab.Request{Op: "udp", Addr: "198.18.0.1:9999", Line: "x"}); r.Data != "x" {
			t.Errorf("udp: %v", r)
		}
		if r := call(netlab.Request{Op: "icmp", Addr: "198.18.0.1"}); !r.OK {
			t.Errorf("icmp: %v", r)
		}
		if r := call(netlab.Request{Op: "raw", Name: "inet"}); r.Errno != "EPERM" {
			t.Errorf("raw socket as uid 1000: %v, want EPERM", r)
		}
		if r := call(netlab.Request{Op: "bulk", Addr: "198.18.0.1:443", Bytes: 3 << 20}); !r.OK {
			t.Errorf("bulk: %v", r)
		}
		if r := call(netlab.Request{Op: "open", ID: "c", Addr: "198.18.0.1:443"}); !r.OK {
			t.Errorf("open: %v", r)
		}
		if r := call(netlab.Request{Op: "echo", ID: "c", Line: "ping"}); r.Data != "ping" {
			t.Errorf("echo: %v", r)
		}
		events, err := server.Call(netlab.Request{Op: "events"})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, e := range events.Events {
			kinds[e.Kind]++
		}
		if kinds["dns"] < 3 || kinds["tcp"] != 3 || kinds["http"] != 1 || kinds["udp"] != 1 {
			t.Errorf("server saw %v: %+v", kinds, events.Events)
		}

		// A process with files laid over /etc, tmpfs on /run and few
		// capabilities.
		p, err := lab.Start(a, netlab.Spec{
			Files: map[string]netlab.File{"/etc/netlab-test/dir/file": {Data: []byte("laid over\n")}},
			Tmpfs: []string{"/run"},
			Caps:  []string{"net_admin"},
			Argv:  []string{"sh", "-c", "cat /etc/netlab-test/dir/file; ls -A /run | wc -l; grep CapBnd /proc/self/status; exec sleep 60"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := p.Log().Await(0, "CapBnd:", 5*time.Second); !ok {
			t.Fatalf("no output: %q", p.Output())
		}
		if want := "laid over\n0\nCapBnd:\t0000000000001000\n"; p.Output() != want {
			t.Errorf("output %q, want %q", p.Output(), want)
		}
		if out, code, err := p.Enter("cat", "/etc/netlab-test/dir/file"); err != nil || code != 0 || out != "laid over\n" {
			t.Errorf("Enter: %q %d %v", out, code, err)
		}
		if _, err := os.Stat("/etc/netlab-test"); !os.IsNotExist(err) {
			t.Errorf("the file is visible outside the process: %v", err)
		}
		if _, err := p.ExecTime(); err != nil {
			t.Error(err)
		}
	})
	for _, ns := range namespaces {
		if _, err := os.Stat("/run/netns/" + ns); !os.IsNotExist(err) {
			t.Errorf("namespace %s is left: %v", ns, err)
		}
	}
}
