package firewall_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// BenchmarkLabGrantName measures a timed grant of a name (agentbox allow
// NAME, the entrypoint's grant-name) until the agent's first connection to
// the name's address passes: the grant, the lookup through the filter and
// the connection. Each sample grants for 1 s and waits for the kernel to
// expire it before the next. Run it with -benchtime 10x.
//
//	grant-ms        grant-name's own run (the command returning)
//	connected-ms    from grant-name's start to the first connection
func BenchmarkLabGrantName(b *testing.B) {
	l := newLab(b)
	p := l.startReady()
	var granted, connected []float64
	for b.Loop() {
		start := time.Now()
		if out, code := egressCmd(b, p, "grant-name", "granted.test", "443", "1"); code != 0 || !strings.Contains(out, "granted") {
			b.Fatalf("grant-name: exit %d: %s", code, out)
		}
		granted = append(granted, ms(time.Since(start)))
		if !l.resolvesTo("granted.test", unlistedV4) {
			b.Fatal("granted.test does not resolve during its grant")
		}
		if r := l.do(netlab.Request{Op: "dial", Addr: addr(unlistedV4, 443)}); !r.OK {
			b.Fatalf("the first connection during the grant: %v", r)
		}
		connected = append(connected, ms(time.Since(start)))
		b.StopTimer()
		time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
		b.StartTimer()
	}
	b.ReportMetric(median(granted), "grant-ms")
	b.ReportMetric(median(connected), "connected-ms")
}
