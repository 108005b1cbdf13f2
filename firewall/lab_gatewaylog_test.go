package firewall_test

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/connlog"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// hostileName is a name the agent sends in its ClientHello: a space, quotes,
// "=", a backslash, control bytes, bytes that are no UTF-8, and a newline
// followed by a whole record of its own.
const hostileName = "a b\"c=d\\e\x01\x1b]0;x\x07\r\x7f\xff\xc3\xa9]}{" +
	"\n" + firewall.GatewayLogPrefix + ` {"start":1,"port":443,"name":"forged","name_bytes":6,"addr":"192.0.2.1","up":1,"down":1,"ms":1,"term":"--","why":"","dropped":0}`

// gatewayRecordLines returns the lines of egress's log that carry the
// gateway's record prefix.
func gatewayRecordLines(out string) []string {
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, firewall.GatewayLogPrefix) {
			lines = append(lines, line)
		}
	}
	return lines
}

// TestLabGatewayRecordsNotForged: a name the agent sends cannot make the
// gateway write a second record, nor a line that begins like one.
func TestLabGatewayRecordsNotForged(t *testing.T) {
	l := newGatewayLab(t)
	l.resolve("allowed.test", "A")
	l.stopped("a hostile SNI", allowedV4, 443, clientHello(hostileName, false))
	l.stopped("a hostile Host", allowedV4, 80, httpHead("h a\"b=c\x01\x7f\xff \\ x=\"y\""))
	time.Sleep(200 * time.Millisecond)
	out := l.egress.Output()
	lines := gatewayRecordLines(out)
	if len(lines) != 2 {
		t.Errorf("2 connections gave %d lines with the record prefix:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, firewall.GatewayLogPrefix+" {") {
			t.Errorf("a line with the prefix inside: %q", line)
		}
	}
}

// recordWant is a record a connection of TestLabGatewayRecords must give.
type recordWant struct {
	name           string
	port           int
	verdict, why   string
	addr           string // "" for none
	up, down       bool   // bytes each way
	nameBytes, min int    // the name's length when not len(name); the least duration in ms
}

// TestLabGatewayRecords: every connection the gateway handles gives one
// record, from the real HAProxy, that internal/connlog parses, with the
// verdict and reason of each kind of refusal; hostile names come out as
// sent, and forge nothing.
func TestLabGatewayRecords(t *testing.T) {
	l := newGatewayLab(t)
	l.resolve("allowed.test", "A")
	// deep.wild.test's addresses answer nothing: the gateway admits the
	// connection and fails to reach the name.
	for _, argv := range [][]string{{"ip", "route", "add", "unreachable", wildV4 + "/32"}, {"ip", "-6", "route", "add", "unreachable", "2001:2::20/128"}} {
		if out, code, err := l.egress.Enter(argv...); err != nil || code != 0 {
			t.Fatalf("%v: %v %d %s", argv, err, code, out)
		}
	}
	long := strings.Repeat("x", 1000) + ".other.test"
	host := "h a\"b=c\x01\x7f\xff \\ x=\"y\""
	l.reaches("SNI allowed.test", allowedV4, 443, addr(allowedV4, 443), clientHello("allowed.test", false))
	if r := l.send(allowedV4, 80, 0, 2*time.Second, "hello http", httpHead("allowed.test")); !r.OK {
		t.Errorf("Host allowed.test: %v", r)
	}
	l.stopped("SNI cohost.test", allowedV4, 443, clientHello("cohost.test", false))
	l.stopped("no SNI", allowedV4, 443, clientHello("", false))
	l.stopped("not TLS or HTTP", allowedV4, 443, []byte{0, 1, 2, '\n'})
	l.stopped("SNI ten.private.test", allowedV4, 443, clientHello("ten.private.test", false))
	l.stopped("SNI deep.wild.test, unreachable", allowedV4, 443, clientHello("deep.wild.test", false))
	l.stopped("a hostile SNI", allowedV4, 443, clientHello(hostileName, false))
	l.stopped("a hostile Host", allowedV4, 80, httpHead(host))
	l.stopped("a long SNI", allowedV4, 443, clientHello(long, false))
	l.stopped("an SNI with a slash", allowedV4, 443, clientHello("x/y.test", false))
	l.stopped("an empty Host", allowedV4, 80, []byte("GET / HTTP/1.1\r\nHost: \r\n\r\n"))
	hello := clientHello("allowed.test", false)
	if r := l.send(allowedV4, 443, 0, 8*time.Second, "\n", hello[:20]); r.OK {
		t.Errorf("half a ClientHello: %v", r)
	}
	wants := []recordWant{
		{name: "allowed.test", port: 443, verdict: connlog.Allowed, why: connlog.ReasonAllowed, addr: allowedV4, up: true, down: true},
		{name: "allowed.test", port: 80, verdict: connlog.Allowed, why: connlog.ReasonAllowed, addr: allowedV4, up: true, down: true},
		{name: "cohost.test", port: 443, verdict: connlog.Refused, why: firewall.GatewayWhyName, up: true},
		{port: 443, verdict: connlog.Refused, why: firewall.GatewayWhyNoName, up: true},
		{port: 443, verdict: connlog.Refused, why: firewall.GatewayWhyProtocol, up: true},
		{name: "ten.private.test", port: 443, verdict: connlog.Refused, why: firewall.GatewayWhyUnresolved, up: true},
		{name: "deep.wild.test", port: 443, verdict: connlog.Failed, why: connlog.ReasonUnreachable, addr: wildV4 + "|2001:2::20", up: true},
		{name: hostileName, port: 443, verdict: connlog.Refused, why: firewall.GatewayWhyName, up: true},
		{name: host, port: 80, verdict: connlog.Refused, why: firewall.GatewayWhyName, up: true},
		{name: long[:firewall.GatewayLogNameMax], nameBytes: len(long), port: 443, verdict: connlog.Refused, why: firewall.GatewayWhyName, up: true},
		{name: "x/y.test", port: 443, verdict: connlog.Refused, why: firewall.GatewayWhyName, up: true},
		{port: 80, verdict: connlog.Refused, why: firewall.GatewayWhyNoName, up: true},
		{port: 443, verdict: connlog.Refused, why: firewall.GatewayWhyTimeout, up: true, min: 4900},
	}
	time.Sleep(200 * time.Millisecond)
	out := l.egress.Output()
	log, err := connlog.Parse(strings.NewReader(out), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if log.BadRecords != 0 || log.Dropped != 0 || len(log.Connections) != len(wants) || len(gatewayRecordLines(out)) != len(wants) {
		t.Errorf("%d connections gave %d records (%d bad, %d dropped), %d lines with the prefix:\n%s",
			len(wants), len(log.Connections), log.BadRecords, log.Dropped, len(gatewayRecordLines(out)), strings.Join(gatewayRecordLines(out), "\n"))
	}
	for _, w := range wants {
		if !slices.ContainsFunc(log.Connections, w.matches) {
			t.Errorf("no record %+v in:\n%s", w, strings.Join(gatewayRecordLines(out), "\n"))
		}
	}
	// HAProxy makes its log's descriptor non-blocking once it logs: on the
	// egress's own stdout, which dnsmasq, ulogd and the entrypoint share,
	// a record the pipe could not take at once was lost (CI lost one), and
	// the others' writes could fail. Its records go through a relay.
	info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/1", l.egress.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^flags:\s*([0-7]+)$`).FindSubmatch(info)
	if m == nil {
		t.Fatalf("no flags in fdinfo:\n%s", info)
	}
	if flags, _ := strconv.ParseInt(string(m[1]), 8, 64); flags&syscall.O_NONBLOCK != 0 {
		t.Errorf("the egress's stdout is non-blocking after the gateway logged (flags %s)", m[1])
	}
}

// matches reports whether r is the record w wants.
func (w recordWant) matches(r connlog.Record) bool {
	nameBytes := cmp.Or(w.nameBytes, len(w.name))
	addrOK := w.addr == "" && r.Address == "" || w.addr != "" && slices.Contains(strings.Split(w.addr, "|"), r.Address)
	return r.Name == w.name && r.NameBytes == nameBytes && r.Port == w.port && r.Verdict == w.verdict && r.Reason == w.why &&
		addrOK && (r.BytesUp > 0) == w.up && (r.BytesDown > 0) == w.down && r.DurationMS >= int64(w.min) &&
		time.Since(r.Start) < time.Minute
}

// TestLabGatewayRecordsLimit: past GatewayLogBurst records in
// GatewayLogPeriod seconds, the gateway drops records, and the next record
// written counts them: records and dropped ones add up to the connections.
func TestLabGatewayRecordsLimit(t *testing.T) {
	l := newGatewayLab(t)
	l.resolve("allowed.test", "A")
	const flood = firewall.GatewayLogBurst + 10
	for i := range flood {
		l.stopped("SNI cohost.test", allowedV4, 443, clientHello(fmt.Sprintf("c%d.cohost.test", i), false))
	}
	// The records come through HAProxy's relay and the egress's stdout: on
	// a busy machine the last ones take a moment.
	eventually(3*time.Second, func() bool {
		log, err := connlog.Parse(strings.NewReader(l.egress.Output()), time.Time{})
		return err != nil || len(log.Connections) >= firewall.GatewayLogBurst
	})
	time.Sleep(200 * time.Millisecond) // none more comes
	log, err := connlog.Parse(strings.NewReader(l.egress.Output()), time.Time{})
	if err != nil || len(log.Connections) != firewall.GatewayLogBurst || log.Dropped != 0 || log.BadRecords != 0 {
		t.Fatalf("%d connections at once: %d records, %d dropped, %d bad (%v), want %d records", flood, len(log.Connections), log.Dropped, log.BadRecords, err, firewall.GatewayLogBurst)
	}
	sent := flood
	deadline := time.Now().Add(3 * firewall.GatewayLogPeriod * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		l.stopped("SNI after.cohost.test", allowedV4, 443, clientHello("after.cohost.test", false))
		sent++
		time.Sleep(100 * time.Millisecond)
		if log, err = connlog.Parse(strings.NewReader(l.egress.Output()), time.Time{}); err != nil {
			t.Fatal(err)
		}
		if len(log.Connections) > firewall.GatewayLogBurst {
			break
		}
	}
	if len(log.Connections) != firewall.GatewayLogBurst+1 || len(log.Connections)+log.Dropped != sent || log.Dropped < flood-firewall.GatewayLogBurst {
		t.Errorf("%d connections: %d records and %d dropped, want %d records and %d dropped",
			sent, len(log.Connections), log.Dropped, firewall.GatewayLogBurst+1, sent-firewall.GatewayLogBurst-1)
	}
}

// TestLabGatewayDroppedRecords: when egress's log stops taking HAProxy's
// records (the cat that relays them stopped, as a container's log that lags
// 64 KiB behind), HAProxy drops records rather than wait; the entrypoint
// says how many as it stops, and the records written and the count dropped
// add up to the connections made. (The records' own rate limit is lifted
// here, so that every connection gives one.)
func TestLabGatewayDroppedRecords(t *testing.T) {
	testenv.RequireProgram(t, "haproxy")
	l := newLab(t)
	limit := fmt.Sprintf("sc0_gpc0_rate ge %d }", firewall.GatewayLogBurst)
	if !bytes.Contains(l.files["haproxy.cfg"], []byte(limit)) {
		t.Fatalf("haproxy.cfg has no %q", limit)
	}
	l.files["haproxy.cfg"] = bytes.ReplaceAll(l.files["haproxy.cfg"], []byte(limit), []byte("sc0_gpc0_rate ge 1000000 }"))
	p := l.startReady()
	l.resolve("allowed.test", "A")
	relay := gatewayRelay(t, pidIn(t, p, "/run/agentbox/gateway.pid"))
	if err := syscall.Kill(relay, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	const conns = 400 // about 330 bytes a record: twice the pipe's 64 KiB
	for i := range conns {
		l.stopped("SNI cohost.test", allowedV4, 443, clientHello(fmt.Sprintf("c%d.cohost.test", i), false))
	}
	if err := syscall.Kill(relay, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := p.Stop(5 * time.Second); code != 0 {
		t.Fatalf("the entrypoint exited with %d on SIGTERM:\n%s", code, p.Output())
	}
	m := regexp.MustCompile(`warning: the gateway dropped (\d+) records of connections \((\d+) since it started\)`).FindStringSubmatch(p.Output())
	if m == nil {
		t.Fatalf("no warning of dropped records:\n%s", p.Output())
	}
	dropped, _ := strconv.Atoi(m[1])
	log, err := connlog.Parse(strings.NewReader(p.Output()), time.Time{})
	if err != nil || dropped == 0 || len(log.Connections)+dropped != conns || log.BadRecords != 0 {
		t.Errorf("%d connections: %d records, %d dropped (%s), %d bad (%v)", conns, len(log.Connections), dropped, m[0], log.BadRecords, err)
	}
}

// gatewayRelay returns the pid of the cat that reads HAProxy's (pid
// haproxy's) standard output.
func gatewayRelay(t *testing.T, haproxy int) int {
	t.Helper()
	out, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", haproxy))
	if err != nil || !strings.HasPrefix(out, "pipe:") {
		t.Fatalf("HAProxy's standard output: %q (%v), want a pipe", out, err)
	}
	procs, _ := os.ReadDir("/proc")
	for _, d := range procs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if in, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", pid)); in == out && strings.TrimSpace(string(comm)) == "cat" {
			return pid
		}
	}
	t.Fatalf("no cat reads %s", out)
	return 0
}
