package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/sandbox"
)

// fakeEgressLogs are egress logs by task ("" is the sandbox); an unknown
// task fails loudly. since records what each call asked for.
type fakeEgressLogs struct {
	logs  map[string]string
	since *time.Time
}

func (f fakeEgressLogs) open(_ context.Context, _ string, task string, since time.Time) (io.ReadCloser, error) {
	log, ok := f.logs[task]
	if !ok {
		return nil, fmt.Errorf("fake egress log: unknown task %q", task)
	}
	if f.since != nil {
		*f.since = since
	}
	return io.NopCloser(strings.NewReader(log)), nil
}

var sandboxEgressLog = `2026-11-22T10:00:00.100000000Z dnsmasq[25]: query[A] agentbox-probe.invalid from 127.0.0.1
2026-11-22T10:00:00.100000001Z dnsmasq[25]: config agentbox-probe.invalid is NXDOMAIN
2026-11-22T10:00:01.000000000Z dnsmasq[25]: query[A] a.cdn.example.com from 172.18.0.2
2026-11-22T10:00:01.000000100Z dnsmasq[25]: config a.cdn.example.com is NXDOMAIN
2026-11-22T10:00:02.000000000Z dnsmasq[25]: query[AAAA] B.cdn.example.com from 172.18.0.2
2026-11-22T10:00:02.000000100Z dnsmasq[25]: config b.cdn.example.com is NXDOMAIN
2026-11-22T10:30:00.000000000Z dnsmasq[25]: query[A] api.evil.example from 172.18.0.2
2026-11-22T10:30:00.000000100Z dnsmasq[25]: config api.evil.example is NXDOMAIN
2026-11-22T10:31:00.000000000Z dnsmasq[25]: query[AAAA] api.evil.example from 172.18.0.2
2026-11-22T10:31:00.000000100Z dnsmasq[25]: config api.evil.example is NXDOMAIN
2026-11-22T10:32:00.000000000Z dnsmasq[25]: query[PTR] 1.0.0.127.in-addr.arpa from 127.0.0.1
2026-11-22T10:32:00.000000100Z dnsmasq[25]: config 1.0.0.127.in-addr.arpa is NXDOMAIN
2026-11-22T10:33:00.000000000Z dnsmasq[25]: config ` + "\x1b]0;owned\x07" + `.example is NXDOMAIN
2026-11-22T10:34:00.000000000Z ` + pktRecord("unlisted", "198.51.100.7", 6, 443) + `
2026-11-22T10:35:00.000000000Z ` + pktRecord("unlisted", "198.51.100.7", 6, 443) + `
2026-11-22T10:35:30.000000000Z ` + pktRecord("unlisted", "198.51.100.7", 6, 22) + `
2026-11-22T10:36:00.000000000Z ` + pktRecord("special", "10.1.2.3", 6, 5432) + `
2026-11-22T10:37:00.000000000Z ` + pktRecord("udp", "198.51.100.8", 17, 53) + `
2026-11-22T10:38:00.000000000Z agentbox-gateway: {"start":1795343880.000,"port":443,"name":"cohost.example","name_bytes":14,"addr":"-","up":79,"down":0,"ms":0,"term":"PR","why":"name","dropped":0}
2026-11-22T10:38:01.000000000Z agentbox-gateway: {"start":1795343881.000,"port":443,"name":"allowed.example","name_bytes":15,"addr":"198.51.100.9","up":79,"down":4000,"ms":20,"term":"--","why":"-","dropped":0}
2026-11-22T10:39:00.000000000Z agentbox-gateway: {"start":1795343940.000,"port":443,"name":"cohost.example","name_bytes":14,"addr":"-","up":79,"down":0,"ms":0,"term":"PR","why":"name","dropped":2}
2026-11-22T10:39:30.000000000Z agentbox-gateway: {"start":1795343970.000,"port":80,"name":"\u001b]0;x\u0007.example","name_bytes":14,"addr":"-","up":60,"down":0,"ms":0,"term":"PR","why":"name","dropped":0}
2026-11-22T10:40:00.000000000Z agentbox-egress: rejected packets: dns=2 docker_dns=0 special=1 other=3 spoof=0 routing=0
`

// pktRecord is a record of the firewall's logger (ulogd2's JSON, trimmed).
func pktRecord(reason, ip string, proto, port int) string {
	return fmt.Sprintf(`{"timestamp": "2026-11-22T10:34:00.000001", "oob.prefix": "agentbox-refused:%s", "oob.time.sec": 1795370040, "oob.time.usec": 1, "oob.uid": 1000, "ip.protocol": %d, "src_port": 40000, "dest_port": %d, "src_ip": "172.30.0.2", "dest_ip": "%s"}`, reason, proto, port, ip)
}

func blockedDeps(since *time.Time) deps {
	d := testDeps()
	d.now = func() time.Time { return time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC) }
	d.egressLog = fakeEgressLogs{logs: map[string]string{
		"":      sandboxEgressLog,
		"fix-1": "dnsmasq[3]: config task.example is NXDOMAIN\n" + strings.Replace(pktRecord("icmp", "10.9.9.9", 1, 0), `"oob.time.sec": 1795370040`, `"oob.time.sec": 0`, 1) + "\n",
	}, since: since}.open
	return d
}

func TestBlocked(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		want  string
		since time.Time
	}{
		{"table", nil, `NAME                      COUNT  FIRST                 LAST                  TYPES   WHY
api.evil.example          2      2026-11-22T10:30:00Z  2026-11-22T10:31:00Z  A,AAAA  unlisted name
\x1b]0;owned\x07.example  1      2026-11-22T10:33:00Z  2026-11-22T10:33:00Z  -       unlisted name
1.0.0.127.in-addr.arpa    1      2026-11-22T10:32:00Z  2026-11-22T10:32:00Z  PTR     unlisted name
a.cdn.example.com         1      2026-11-22T10:00:01Z  2026-11-22T10:00:01Z  A       unlisted name
b.cdn.example.com         1      2026-11-22T10:00:02Z  2026-11-22T10:00:02Z  AAAA    unlisted name

ADDRESS       PORT  PROTO  COUNT  FIRST                 LAST                  WHY
198.51.100.7  443   tcp    2      2026-11-22T10:34:00Z  2026-11-22T10:35:00Z  TCP to an unlisted address or port
10.1.2.3      5432  tcp    1      2026-11-22T10:36:00Z  2026-11-22T10:36:00Z  private or special-purpose address
198.51.100.7  22    tcp    1      2026-11-22T10:35:30Z  2026-11-22T10:35:30Z  TCP to an unlisted address or port
198.51.100.8  53    udp    1      2026-11-22T10:37:00Z  2026-11-22T10:37:00Z  UDP (only TCP is allowed)
rejected packets: dns=2 other=3 special=1 (every packet; the rows above are those logged, at most 5 a second)

NAME (THE GATEWAY)    PORT  COUNT  FIRST                 LAST                  WHY
cohost.example        443   2      2026-11-22T10:38:00Z  2026-11-22T10:39:00Z  name not allowed on this port
\x1b]0;x\x07.example  80    1      2026-11-22T10:39:30Z  2026-11-22T10:39:30Z  name not allowed on this port
2 records of the gateway dropped by its rate limit (of any verdict)
`, time.Time{}},
		{"suggest", []string{"--suggest"}, `# agentbox blocked --suggest: network.domains entries that would allow what was refused.
# Review each one before you apply it: an allowed name is a place the agent can send data to.
# A plain name admits its subdomains too; "*.name" admits only its subdomains.
# agentbox policy add applies them: it edits agentbox.yaml in place and changes the running sandbox at once,
# without restarting it (or paste them under "network:" / "  domains:" and run agentbox generate && agentbox up,
# which recreates the sandbox: the agent's processes restart, its volumes stay).
#   agentbox policy add '*.cdn.example.com' api.evil.example
    - "*.cdn.example.com"   # refused 2 times (A, AAAA): a.cdn.example.com, b.cdn.example.com
    - api.evil.example   # refused 2 times (A, AAAA)
# network.cidrs entries for the public addresses refused over TCP, one address each.
# An address of a CDN or a cloud serves others too and changes: prefer the name the agent used.
# agentbox policy add applies each (or paste it under "network:" / "  cidrs:"):
#   agentbox policy add 198.51.100.7/32 --ports 22,443
    - {cidr: 198.51.100.7/32, ports: [22, 443]}   # refused 3 times
`, time.Time{}},
		{"since a duration", []string{"--since", "45m", "--suggest"}, `# agentbox blocked --suggest: network.domains entries that would allow what was refused.
# Review each one before you apply it: an allowed name is a place the agent can send data to.
# A plain name admits its subdomains too; "*.name" admits only its subdomains.
# agentbox policy add applies them: it edits agentbox.yaml in place and changes the running sandbox at once,
# without restarting it (or paste them under "network:" / "  domains:" and run agentbox generate && agentbox up,
# which recreates the sandbox: the agent's processes restart, its volumes stay).
#   agentbox policy add api.evil.example
    - api.evil.example   # refused 2 times (A, AAAA)
# network.cidrs entries for the public addresses refused over TCP, one address each.
# An address of a CDN or a cloud serves others too and changes: prefer the name the agent used.
# agentbox policy add applies each (or paste it under "network:" / "  cidrs:"):
#   agentbox policy add 198.51.100.7/32 --ports 22,443
    - {cidr: 198.51.100.7/32, ports: [22, 443]}   # refused 3 times
`, time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)},
		{"since a time", []string{"--since", "2026-11-22T10:30:30Z"}, `NAME                      COUNT  FIRST                 LAST                  TYPES  WHY
\x1b]0;owned\x07.example  1      2026-11-22T10:33:00Z  2026-11-22T10:33:00Z  -      unlisted name
1.0.0.127.in-addr.arpa    1      2026-11-22T10:32:00Z  2026-11-22T10:32:00Z  PTR    unlisted name
api.evil.example          1      2026-11-22T10:31:00Z  2026-11-22T10:31:00Z  AAAA   unlisted name

ADDRESS       PORT  PROTO  COUNT  FIRST                 LAST                  WHY
198.51.100.7  443   tcp    2      2026-11-22T10:34:00Z  2026-11-22T10:35:00Z  TCP to an unlisted address or port
10.1.2.3      5432  tcp    1      2026-11-22T10:36:00Z  2026-11-22T10:36:00Z  private or special-purpose address
198.51.100.7  22    tcp    1      2026-11-22T10:35:30Z  2026-11-22T10:35:30Z  TCP to an unlisted address or port
198.51.100.8  53    udp    1      2026-11-22T10:37:00Z  2026-11-22T10:37:00Z  UDP (only TCP is allowed)
rejected packets: dns=2 other=3 special=1 (every packet; the rows above are those logged, at most 5 a second)

NAME (THE GATEWAY)    PORT  COUNT  FIRST                 LAST                  WHY
cohost.example        443   2      2026-11-22T10:38:00Z  2026-11-22T10:39:00Z  name not allowed on this port
\x1b]0;x\x07.example  80    1      2026-11-22T10:39:30Z  2026-11-22T10:39:30Z  name not allowed on this port
2 records of the gateway dropped by its rate limit (of any verdict)
`, time.Date(2026, 11, 22, 10, 30, 30, 0, time.UTC)},
		{"a task without timestamps", []string{"--task", "fix-1"}, `NAME          COUNT  FIRST  LAST  TYPES  WHY
task.example  1      -      -     -      unlisted name

ADDRESS   PORT  PROTO  COUNT  FIRST  LAST  WHY
10.9.9.9  -     icmp   1      -      -     ICMP
rejected packets: none

no connections refused by the gateway
`, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var since time.Time
			stdout, stderr, code := runDeps(t, blockedDeps(&since), append([]string{"blocked"}, tt.args...)...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if stdout != tt.want {
				t.Errorf("got\n%s\nwant\n%s", stdout, tt.want)
			}
			if !since.Equal(tt.since) {
				t.Errorf("asked docker for the log since %v, want %v", since, tt.since)
			}
		})
	}
}

// TestBlockedJSON: the documented shape, names printable, no suggestions
// unless asked.
func TestBlockedJSON(t *testing.T) {
	for _, suggest := range []bool{false, true} {
		args := []string{"blocked", "--json"}
		if suggest {
			args = append(args, "--suggest")
		}
		stdout, stderr, code := runDeps(t, blockedDeps(nil), args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var v map[string]json.RawMessage
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatal(err)
		}
		if _, ok := v["suggestions"]; ok != suggest {
			t.Errorf("--suggest %v: suggestions present %v", suggest, ok)
		}
		for _, want := range []string{`"name": "api.evil.example"`, `"count": 2`, `"first_seen": "2026-11-22T10:30:00.0000001Z"`,
			`"types": [`, `"why": "unlisted name"`, `"rejected_packets": {`, `"dns": 2`, `"dropped_refusals": 0`, `"skipped_lines": 0`,
			`"name": "\u001b]0;owned\u0007.example"`,
			`"addresses": [`, `"address": "198.51.100.7"`, `"port": 443`, `"protocol": "tcp"`, `"reason": "unlisted"`,
			`"why": "TCP to an unlisted address or port"`, `"dropped_records": 0`, `"bad_records": 0`,
			`"gateway": [`, `"name": "cohost.example"`, `"reason": "name"`, `"name": "\u001b]0;x\u0007.example"`, `"gateway_dropped_records": 2`} {
			if !strings.Contains(stdout, want) {
				t.Errorf("the JSON lacks %s:\n%s", want, stdout)
			}
		}
		if _, ok := v["cidr_suggestions"]; ok != suggest {
			t.Errorf("--suggest %v: cidr_suggestions present %v", suggest, ok)
		}
		if suggest && !strings.Contains(stdout, `"cidr": "198.51.100.7/32"`) {
			t.Errorf("no CIDR suggestion:\n%s", stdout)
		}
		if suggest && !strings.Contains(stdout, `"domain": "*.cdn.example.com"`) {
			t.Errorf("no wildcard suggestion:\n%s", stdout)
		}
	}
}

func TestBlockedUsage(t *testing.T) {
	for _, args := range [][]string{
		{"blocked", "--since", "yesterday"},
		{"blocked", "--since", "-1h"},
		{"blocked", "--task", "../x"},
		{"blocked", "extra"},
	} {
		_, stderr, code := runDeps(t, blockedDeps(nil), args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d: %s", args, code, exitUsage, stderr)
		}
	}
	_, stderr, code := runDeps(t, blockedDeps(nil), "blocked", "--task", "nope")
	if code != exitError || !strings.Contains(stderr, `unknown task "nope"`) {
		t.Errorf("an unknown task: exit %d: %s", code, stderr)
	}
}

// TestStartLog: the log is stdout and stderr together, and a command that
// fails ends the reading with its last line.
func TestStartLog(t *testing.T) {
	r, err := sandbox.StartLog(exec.CommandContext(t.Context(), "sh", "-c", "echo out; echo err >&2; echo 'no such container: x' >&2; exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if cerr := r.Close(); cerr != nil {
		t.Error(cerr)
	}
	if string(out) != "out\nerr\nno such container: x\n" || err == nil || !strings.Contains(err.Error(), "sh -c: no such container: x") {
		t.Errorf("read %q, %v", out, err)
	}
	r, _ = sandbox.StartLog(exec.CommandContext(t.Context(), "sh", "-c", "yes dnsmasq"))
	if _, err := r.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	r.Close() // before the end: the command ends, Close returns
}

// TestBlockedSuggestLeavesOutProbes: what agentbox itself probed (the
// entrypoint's name, verify's default targets and those agentbox.yaml
// names) is listed as refused but never suggested; the suggestion says what
// it left out, and its hint names the commands that apply the change.
func TestBlockedSuggestLeavesOutProbes(t *testing.T) {
	log := `dnsmasq[25]: config agentbox-probe.invalid is NXDOMAIN
dnsmasq[25]: config example.com is NXDOMAIN
dnsmasq[25]: config decoy.agentbox.test is NXDOMAIN
dnsmasq[25]: config api.real.example is NXDOMAIN
` + pktRecord("unlisted", "1.1.1.1", 6, 443) + "\n" +
		pktRecord("unlisted", "2606:4700:4700::1111", 6, 443) + "\n" +
		pktRecord("unlisted", "198.18.0.9", 6, 80) + "\n" +
		pktRecord("unlisted", "198.18.0.9", 6, 8080) + "\n"
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), []byte(`verify:
  unlisted_name: decoy.agentbox.test
  unlisted_address: 198.18.0.9:80
`))
	d := testDeps()
	d.egressLog = fakeEgressLogs{logs: map[string]string{"": log}}.open
	stdout, stderr, code := runInDeps(t, d, dir, "blocked", "--suggest")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := `# agentbox blocked --suggest: network.domains entries that would allow what was refused.
# Review each one before you apply it: an allowed name is a place the agent can send data to.
# A plain name admits its subdomains too; "*.name" admits only its subdomains.
# agentbox policy add applies them: it edits agentbox.yaml in place and changes the running sandbox at once,
# without restarting it (or paste them under "network:" / "  domains:" and run agentbox generate && agentbox up,
# which recreates the sandbox: the agent's processes restart, its volumes stay).
#   agentbox policy add api.real.example
    - api.real.example   # refused 1 time
# network.cidrs entries for the public addresses refused over TCP, one address each.
# An address of a CDN or a cloud serves others too and changes: prefer the name the agent used.
# agentbox policy add applies each (or paste it under "network:" / "  cidrs:"):
#   agentbox policy add 198.18.0.9/32 --ports 8080
    - {cidr: 198.18.0.9/32, ports: [8080]}   # refused 1 time
# Left out: agentbox's own probes (agentbox verify's targets), refused as they should be:
# 1.1.1.1:443, 198.18.0.9:80, [2606:4700:4700::1111]:443, decoy.agentbox.test, example.com
`
	if stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
	stdout, _, _ = runInDeps(t, d, dir, "blocked", "--suggest", "--json")
	var v struct {
		LeftOut []string `json:"left_out"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || len(v.LeftOut) != 5 {
		t.Errorf("--json: left_out %q (%v):\n%s", v.LeftOut, err, stdout)
	}
	// The table still lists them: they were refused.
	stdout, _, _ = runInDeps(t, d, dir, "blocked")
	for _, w := range []string{"example.com", "decoy.agentbox.test", "1.1.1.1"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("the table lacks %s:\n%s", w, stdout)
		}
	}
}
