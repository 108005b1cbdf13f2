package firewall_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// logStatement is a log rule of rules.nft: without them the ruleset refuses
// the same, unlogged.
var logStatement = regexp.MustCompile(`(?m)^.* log prefix ".*\n`)

// ruleLoader loads the generated rules.nft, with or without its log rules,
// as the entrypoint does (the upstream and allowedV4 added), of the lab's
// policy without the gateway: the bench runs no HAProxy, and the cost it
// measures is the kernel's.
func ruleLoader(b *testing.B, l *lab) func(logged bool) {
	files := map[bool]string{}
	whole := l.inlined(addressRules(b)) // its log rules are common.nft's
	for logged, data := range map[bool][]byte{true: whole, false: logStatement.ReplaceAll(whole, nil)} {
		path := filepath.Join(l.lab.Dir(), fmt.Sprintf("rules-%v.nft", logged))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
		files[logged] = path
	}
	if unlogged := logStatement.ReplaceAll(whole, nil); !strings.Contains(string(whole), "log prefix") ||
		strings.Contains(string(unlogged), "log prefix") || !strings.Contains(string(unlogged), "goto refuse_other") {
		b.Fatal("the unlogged ruleset is not the logged one without its log rules")
	}
	return func(logged bool) { l.loadTable(files[logged]) }
}

// BenchmarkLabRefusedLogCost measures what logging refused packets costs
// while a second process of the agent floods refused UDP: a bulk TCP
// transfer (bulkBytes from allowed.test) with the generated ruleset and
// with the same ruleset without its log rules, b.N pairs in the same lab,
// alternating which goes first. Run it with -benchtime 10x.
//
//	logged/unlogged          the median of the per-pair ratios of throughput
//	logged-MB/s, unlogged-MB/s   the medians of each
//	logged-kpps, unlogged-kpps   refused datagrams a second the flood sent meanwhile
func BenchmarkLabRefusedLogCost(b *testing.B) {
	const bulkBytes = 256 << 20
	testenv.RequireProgram(b, "ulogd")
	l := newLab(b)
	l.startReady()
	flooder, err := l.lab.StartHelper(l.sbx, "agent", agentUID)
	if err != nil {
		b.Fatal(err)
	}
	load := ruleLoader(b, l)
	measure := func(logged bool) (mbs, kpps float64) {
		load(logged)
		time.Sleep(20 * time.Millisecond)
		flood := make(chan netlab.Response, 1)
		go func() {
			r, _ := flooder.Call(netlab.Request{Op: "flood", Addr: addr(unlistedV4, 9999), Count: 1 << 30, Timeout: 2 * time.Second})
			flood <- r
		}()
		time.Sleep(100 * time.Millisecond) // the flood is under way
		r := l.do(netlab.Request{Op: "bulk", Addr: addr(allowedV4, 443), Bytes: bulkBytes, Timeout: time.Minute})
		f := <-flood
		if !r.OK || f.Sent == 0 {
			b.Fatalf("transfer %v, flood %v", r, f)
		}
		return bulkBytes / r.Elapsed.Seconds() / 1e6, float64(f.Sent) / f.Elapsed.Seconds() / 1e3
	}
	var ratios, lMBs, uMBs, lKpps, uKpps []float64
	i := 0
	for b.Loop() {
		var lm, lk, um, uk float64
		if i%2 == 0 {
			lm, lk = measure(true)
			um, uk = measure(false)
		} else {
			um, uk = measure(false)
			lm, lk = measure(true)
		}
		i++
		ratios = append(ratios, lm/um)
		lMBs, uMBs, lKpps, uKpps = append(lMBs, lm), append(uMBs, um), append(lKpps, lk), append(uKpps, uk)
	}
	b.ReportMetric(median(ratios), "logged/unlogged")
	b.ReportMetric(median(lMBs), "logged-MB/s")
	b.ReportMetric(median(uMBs), "unlogged-MB/s")
	b.ReportMetric(median(lKpps), "logged-kpps")
	b.ReportMetric(median(uKpps), "unlogged-kpps")
}

// BenchmarkLabRefusedLogFlood floods refused UDP for floodFor and measures
// what the logger wrote meanwhile: the bytes of its JSON lines, and the
// records. The bound from the limit: LogBurst + LogRate per second (the
// kernel's bucket holds LogRate + LogBurst tokens). Run it with
// -benchtime 1x.
//
//	bytes/min     the JSON written, per minute of flood
//	records/min   the records, per minute
//	bound-records/min   LogRate*60 + LogRate + LogBurst
//	bytes/record  the mean size of a record
func BenchmarkLabRefusedLogFlood(b *testing.B) {
	const floodFor = time.Minute
	testenv.RequireProgram(b, "ulogd")
	l := newLab(b)
	p := l.startReady()
	var bytes, records, packets []float64
	for b.Loop() {
		time.Sleep(time.Duration(firewall.LogBurst/firewall.LogRate+1) * time.Second) // a full bucket
		from := len(p.Log().Lines())
		r := l.do(netlab.Request{Op: "flood", Addr: addr(unlistedV4, 9999), Count: 1 << 30, Timeout: floodFor})
		time.Sleep(300 * time.Millisecond)
		n, size := 0, 0
		for _, line := range p.Log().Lines()[from:] {
			if strings.HasPrefix(line.Text, "{") {
				n++
				size += len(line.Text) + 1
			}
		}
		minutes := r.Elapsed.Minutes()
		bytes, records, packets = append(bytes, float64(size)/minutes), append(records, float64(n)/minutes), append(packets, float64(r.Sent)/minutes)
	}
	b.ReportMetric(slices.Max(bytes), "bytes/min")
	b.ReportMetric(slices.Max(records), "records/min")
	b.ReportMetric(float64(firewall.LogRate*60+firewall.LogRate+firewall.LogBurst), "bound-records/min")
	b.ReportMetric(slices.Max(bytes)/slices.Max(records), "bytes/record")
	b.ReportMetric(median(packets), "flood-packets/min")
}
