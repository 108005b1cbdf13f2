package firewall_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// BenchmarkLabGateway compares, in one lab, the path through the gateway
// (the ruleset with Policy.Gateway, HAProxy) with the nftables-only path
// (the ruleset without it): b.N pairs of each figure, alternating which
// goes first. Each connection opens with a ClientHello for allowed.test.
// Run it with -benchtime 20x.
//
//	gateway/nft-only      the median of the per-pair ratios of the throughput of a bulkBytes download
//	gateway-MB/s, nft-only-MB/s   the medians of each
//	gateway-setup-us, nft-only-setup-us   from connect() to the server's greeting
//	added-setup-us        the median of the per-pair differences
//	haproxy-cpu-ms        HAProxy's CPU time (user and system) per download, the median
//	relay/nft-only, relay-cpu-ms   the same download through the least relay
//	                      there is instead of HAProxy (relayMain: accept, connect, then Go's
//	                      io.Copy each way, which splices as HAProxy does), as the
//	                      ruleset redirects to HAProxy: what a second TCP connection
//	                      costs here, whatever relays it
func BenchmarkLabGateway(b *testing.B) {
	const bulkBytes = 256 << 20
	settle := 20 * time.Millisecond
	l := newGatewayLab(b)
	hello := append(clientHello("allowed.test", false), '\n')
	if bytes.Count(hello, []byte("\n")) != 1 {
		b.Fatal("the ClientHello holds a newline: the server would read a command in it")
	}
	gated := l.files["rules.nft"]
	plain := addressRules(b)
	if bytes.Equal(plain, gated) {
		b.Fatal("the rulesets with and without the gateway are the same")
	}
	load := func(rules []byte) {
		path := filepath.Join(l.lab.Dir(), "bench-rules.nft")
		if err := os.WriteFile(path, l.inlined(rules), 0o644); err != nil {
			b.Fatal(err)
		}
		l.loadTable(path)
		time.Sleep(settle)
	}
	setup := func() time.Duration {
		r := l.do(netlab.Request{Op: "send", Addr: addr(allowedV4, 443), Chunks: [][]byte{hello}, Timeout: 2 * time.Second, Line: "\n"})
		if !r.OK || !strings.HasPrefix(r.Data, "hello "+addr(allowedV4, 443)) {
			b.Fatalf("set-up: %v", r)
		}
		return r.Elapsed
	}
	transfer := func() time.Duration {
		r := l.do(netlab.Request{Op: "bulk", Addr: addr(allowedV4, 443), Chunks: [][]byte{hello}, Bytes: bulkBytes, Timeout: time.Minute})
		if !r.OK {
			b.Fatalf("transfer: %v", r)
		}
		return r.Elapsed
	}
	haproxy := pidIn(b, l.egress, "/run/agentbox/gateway.pid")
	type figures struct {
		setup, bulk time.Duration
		cpu         float64 // HAProxy's, in ms
	}
	run := func(rules []byte) figures {
		load(rules)
		var s []float64
		for range 5 {
			s = append(s, float64(setup()))
		}
		cpu := cpuMillis(b, haproxy)
		bulk := transfer()
		return figures{time.Duration(median(s)), bulk, cpuMillis(b, haproxy) - cpu} // the median of five set-ups
	}
	// The least relay, as HAProxy's uid, on relayPort; the ruleset that
	// redirects there instead.
	listen := regexp.MustCompile(`\t443 : (\d+),\n`).FindSubmatch(gated)
	if listen == nil {
		b.Fatalf("the ruleset sends port 443 to no listener:\n%s", gated)
	}
	relayed := bytes.Replace(gated, listen[0], []byte(fmt.Sprintf("\t443 : %d,\n", relayPort)), 1)
	relayed = regexp.MustCompile(`(ip6? daddr (127\.0\.0\.1|::1) tcp dport) \d+-\d+ accept`).ReplaceAll(relayed, []byte(fmt.Sprintf("$1 %d accept", relayPort)))
	if bytes.Count(relayed, []byte(strconv.Itoa(relayPort))) != 3 {
		b.Fatalf("the ruleset does not send port 443 to the gateway's listeners as the relay expects:\n%s", gated)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	relayCmd := exec.Command("ip", "netns", "exec", l.sbx, "setpriv", fmt.Sprintf("--reuid=%d", firewall.GatewayUID), fmt.Sprintf("--regid=%d", firewall.GatewayUID), "--clear-groups", self)
	relayCmd.Env = append(os.Environ(), relayEnv+"="+addr(allowedV4, 443))
	relayCmd.Stderr = os.Stderr
	if err := relayCmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { relayCmd.Process.Kill(); relayCmd.Wait() })
	relayCPU := func() float64 { return cpuMillis(b, relayCmd.Process.Pid) }
	runRelay := func() figures {
		load(relayed)
		cpu := relayCPU()
		bulk := transfer()
		return figures{bulk: bulk, cpu: relayCPU() - cpu}
	}
	var ratios, gMBs, nMBs, gSetup, nSetup, added, cpu, relayRatios, relayCPUs []float64
	mbs := func(d time.Duration) float64 { return bulkBytes / d.Seconds() / 1e6 }
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	i := 0
	for b.Loop() {
		var g, n figures
		if i%2 == 0 {
			g, n = run(gated), run(plain)
		} else {
			n, g = run(plain), run(gated)
		}
		i++
		ratios = append(ratios, n.bulk.Seconds()/g.bulk.Seconds())
		gMBs, nMBs = append(gMBs, mbs(g.bulk)), append(nMBs, mbs(n.bulk))
		gSetup, nSetup = append(gSetup, us(g.setup)), append(nSetup, us(n.setup))
		added = append(added, us(g.setup)-us(n.setup))
		cpu = append(cpu, g.cpu)
		r := runRelay()
		relayRatios = append(relayRatios, n.bulk.Seconds()/r.bulk.Seconds())
		relayCPUs = append(relayCPUs, r.cpu)
	}
	b.ReportMetric(median(ratios), "gateway/nft-only")
	b.ReportMetric(median(gMBs), "gateway-MB/s")
	b.ReportMetric(median(nMBs), "nft-only-MB/s")
	b.ReportMetric(median(gSetup), "gateway-setup-us")
	b.ReportMetric(median(nSetup), "nft-only-setup-us")
	b.ReportMetric(median(added), "added-setup-us")
	b.ReportMetric(median(cpu), "haproxy-cpu-ms")
	b.ReportMetric(median(relayRatios), "relay/nft-only")
	b.ReportMetric(median(relayCPUs), "relay-cpu-ms")
}

// relayEnv, set to HOST:PORT, makes the test binary the least relay
// (relayMain) instead of the tests.
const relayEnv = "AGENTBOX_LAB_RELAY"

// relayPort is the relay's listener on 127.0.0.1, above 1024: it runs
// without capabilities.
const relayPort = 1600

func init() {
	if target := os.Getenv(relayEnv); target != "" {
		relayMain(target)
		os.Exit(0)
	}
}

// relayMain accepts on 127.0.0.1:relayPort and relays each connection to
// target, both ways: the least that a relay does.
func relayMain(target string) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", relayPort))
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			defer c.Close()
			s, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer s.Close()
			done := make(chan struct{})
			go func() { io.Copy(s, c); s.(*net.TCPConn).CloseWrite(); close(done) }()
			io.Copy(c, s)
			c.(*net.TCPConn).CloseWrite()
			<-done
		}()
	}
}

// cpuMillis is the CPU time (user and system) process pid has used, in ms.
func cpuMillis(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th, in clock ticks (USER_HZ, 100 on Linux).
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	var ticks float64
	for _, v := range f[11:13] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %q", pid, s)
		}
		ticks += n
	}
	return ticks * 10
}

// addressRules is the lab's rules.nft without the gateway: the
// address-based ruleset.
func addressRules(b *testing.B) []byte {
	b.Helper()
	c, err := generator.Compile("testdata/lab", generator.CompileOptions{CheckMounts: true})
	if err != nil {
		b.Fatal(err)
	}
	pol := c.Plan().Policy
	pol.Gateway = false
	files, err := firewall.Render(pol)
	if err != nil {
		b.Fatal(err)
	}
	return files["rules.nft"]
}
