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
//	haproxy-cpu-ms        HAProxy's CPU time per download, the median
//	gateway-server-cpu-ms, gateway-agent-cpu-ms, gateway-machine-cpu-ms, and the same
//	                      for nft-only: the server's, the agent's and the whole
//	                      machine's (every CPU, softirqs included) CPU time per download
//	busiest-stage-ratio   the nft-only path's busiest process over the gateway's (the
//	                      server, the agent, HAProxy): the ratio where each had a core
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
		// CPU time in ms during the download: HAProxy's (or the relay's),
		// the server's, the agent's, and the machine's (every CPU, softirqs
		// included)
		cpu, server, agent, machine float64
	}
	// measured is the download's figures, with relay's CPU as cpu.
	measured := func(relay int) figures {
		r0, s0, a0, m0 := cpuMillis(b, relay), cpuMillis(b, l.internet.Pid()), cpuMillis(b, l.agent.Pid()), machineMillis(b)
		bulk := transfer()
		return figures{bulk: bulk, cpu: cpuMillis(b, relay) - r0, server: cpuMillis(b, l.internet.Pid()) - s0,
			agent: cpuMillis(b, l.agent.Pid()) - a0, machine: machineMillis(b) - m0}
	}
	run := func(rules []byte) figures {
		load(rules)
		var s []float64
		for range 5 {
			s = append(s, float64(setup()))
		}
		f := measured(haproxy)
		f.setup = time.Duration(median(s)) // the median of five set-ups
		return f
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
	runRelay := func() figures {
		load(relayed)
		return measured(relayCmd.Process.Pid)
	}
	var ratios, gMBs, nMBs, gSetup, nSetup, added, cpu, relayRatios, relayCPUs []float64
	var gServer, gAgent, gMachine, nServer, nAgent, nMachine, stages []float64
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
		gServer, gAgent, gMachine = append(gServer, g.server), append(gAgent, g.agent), append(gMachine, g.machine)
		nServer, nAgent, nMachine = append(nServer, n.server), append(nAgent, n.agent), append(nMachine, n.machine)
		stages = append(stages, max(n.server, n.agent)/max(g.server, g.agent, g.cpu))
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
	b.ReportMetric(median(gServer), "gateway-server-cpu-ms")
	b.ReportMetric(median(gAgent), "gateway-agent-cpu-ms")
	b.ReportMetric(median(gMachine), "gateway-machine-cpu-ms")
	b.ReportMetric(median(nServer), "nft-only-server-cpu-ms")
	b.ReportMetric(median(nAgent), "nft-only-agent-cpu-ms")
	b.ReportMetric(median(nMachine), "nft-only-machine-cpu-ms")
	b.ReportMetric(median(stages), "busiest-stage-ratio")
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

// cpuMillis is the CPU time process pid's threads have run, in ms: the
// sum of their /proc schedstat run times (ns; /proc/PID/stat counts ticks
// of 10 ms, too coarse for one download). A thread that has exited is not
// counted: the processes measured keep theirs.
func cpuMillis(b *testing.B, pid int) float64 {
	b.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		b.Fatalf("process %d has no threads to read: %v", pid, err)
	}
	var ns float64
	for _, task := range tasks {
		data, err := os.ReadFile(task)
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(data))
		if len(f) != 3 {
			b.Fatalf("%s: %q", task, data)
		}
		n, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			b.Fatalf("%s: %q", task, data)
		}
		ns += n
	}
	return ns / 1e6
}

// machineMillis is the CPU time every CPU has spent outside idle and
// iowait since boot, in ms: /proc/stat's first line (user, nice, system,
// irq, softirq and steal, in USER_HZ ticks of 10 ms).
func machineMillis(b *testing.B) float64 {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		b.Fatalf("/proc/stat: %q", line)
	}
	var ticks float64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			b.Fatalf("/proc/stat: %q", line)
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
