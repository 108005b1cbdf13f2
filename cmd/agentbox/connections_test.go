package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// gatewayLog is the gateway's records as HAProxy writes them, with Docker's
// timestamps: an allowed connection, a hostile name refused, one dropped
// record counted, and a malformed line.
const gatewayLog = `2026-11-22T10:00:01.000000000Z agentbox-gateway: {"start":1795341600.500,"port":443,"name":"api.example.com","name_bytes":15,"addr":"198.51.100.7","up":1200,"down":45000,"ms":1500,"term":"--","why":"-","dropped":0}
2026-11-22T10:00:02.000000000Z dnsmasq[25]: query[A] api.example.com from 127.0.0.1
2026-11-22T10:30:00.000000000Z agentbox-gateway: {"start":1795343400.000,"port":443,"name":"\u001b]0;owned\u0007.example","name_bytes":18,"addr":"-","up":300,"down":0,"ms":0,"term":"PR","why":"name","dropped":2}
2026-11-22T10:31:00.000000000Z agentbox-gateway: {"start":1795343460.000,"port":443,"name":"x"}
`

func connectionsDeps(since *time.Time) deps {
	d := testDeps()
	d.now = func() time.Time { return time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC) }
	d.egressLog = fakeEgressLogs{logs: map[string]string{"": gatewayLog, "fix-1": ""}, since: since}.open
	return d
}

// TestConnections: the table, the hostile name escaped, the dropped and
// malformed records counted; --since asks Docker from then on; a task.
func TestConnections(t *testing.T) {
	var since time.Time
	stdout, stderr, code := runDeps(t, connectionsDeps(&since), "connections")
	want := `START                     NAME                      PORT  ADDRESS       UP    DOWN   DURATION  VERDICT  WHY
2026-11-22T10:00:00.500Z  api.example.com           443   198.51.100.7  1200  45000  1.5s      allowed  allowed
2026-11-22T10:30:00.000Z  \x1b]0;owned\x07.example  443   -             300   0      0s        refused  name not allowed on this port
2 records dropped by the gateway's rate limit (at most 50 in 10 s; each record written counts those dropped before it)
1 malformed records of the gateway skipped
`
	if code != 0 || stderr != "" || stdout != want {
		t.Errorf("exit %d: %s\ngot\n%s\nwant\n%s", code, stderr, stdout, want)
	}
	stdout, _, _ = runDeps(t, connectionsDeps(&since), "connections", "--since", "45m")
	if !since.Equal(time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)) || strings.Contains(stdout, "api.example.com") || !strings.Contains(stdout, "owned") {
		t.Errorf("--since 45m: since %v:\n%s", since, stdout)
	}
	if stdout, _, code := runDeps(t, connectionsDeps(nil), "connections", "--task", "fix-1"); code != 0 || stdout != "no connections recorded\n" {
		t.Errorf("a task with no records: exit %d: %q", code, stdout)
	}
}

// TestConnectionsJSON: the documented shape, the name as sent, escaped
// for a terminal.
func TestConnectionsJSON(t *testing.T) {
	stdout, stderr, code := runDeps(t, connectionsDeps(nil), "connections", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"connections": [`, `"start": "2026-11-22T10:00:00.5Z"`, `"port": 443`, `"name": "api.example.com"`,
		`"name_bytes": 15`, `"address": "198.51.100.7"`, `"bytes_up": 1200`, `"bytes_down": 45000`, `"duration_ms": 1500`,
		`"verdict": "allowed"`, `"reason": "allowed"`, `"termination_state": "--"`, `"name": "\u001b]0;owned\u0007.example"`,
		`"reason": "name"`, `"destinations": [`, `"connections": 1`, `"refused": 1`, `"dropped_records": 2`, `"bad_records": 1`,
		`"skipped_lines": 0`, `"not_listed": 0`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the JSON lacks %s:\n%s", want, stdout)
		}
	}
}

// TestConnectionsUsage: bad flags are usage errors, an unknown task an
// error.
func TestConnectionsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"connections", "--since", "yesterday"},
		{"connections", "--since", "-1h"},
		{"connections", "--task", "../x"},
		{"connections", "extra"},
		{"connections", "--json=maybe"},
	} {
		_, stderr, code := runDeps(t, connectionsDeps(nil), args...)
		if code != exitUsage || stderr == "" {
			t.Errorf("%q: exit %d, want %d: %s", args, code, exitUsage, stderr)
		}
	}
	if _, stderr, _ := runDeps(t, connectionsDeps(nil), "connections", "--since", "yesterday"); !strings.Contains(stderr, `invalid --since "yesterday"`) {
		t.Errorf("--since yesterday: %s", stderr)
	}
	_, stderr, code := runDeps(t, connectionsDeps(nil), "connections", "--task", "nope")
	if code != exitError || !strings.Contains(stderr, `unknown task "nope"`) {
		t.Errorf("an unknown task: exit %d: %s", code, stderr)
	}
}
