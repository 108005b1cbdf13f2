package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
)

// fakeEgress answers agentbox-egress commands from a map keyed by the task
// and the arguments ("fix-1: grants"); an unknown command fails the test.
type fakeEgress struct {
	t       *testing.T
	mu      sync.Mutex
	replies map[string]fakeReply
	calls   []string
	running string // the profile the sandbox runs: balanced when empty
}

func (f *fakeEgress) profile(context.Context, string, string) (string, error) {
	if f.running == "" {
		return "balanced", nil
	}
	return f.running, nil
}

type fakeReply struct {
	out string
	err error
}

func (f *fakeEgress) run(_ context.Context, _, task string, args ...string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := task + ": " + strings.Join(args, " ")
	f.calls = append(f.calls, key)
	r, ok := f.replies[key]
	if !ok {
		f.t.Errorf("fake egress: unexpected command %q", key)
		return "", fmt.Errorf("fake egress: unexpected command %q", key)
	}
	return r.out, r.err
}

var allowNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// allowProject is a project with yaml appended to a small agentbox.yaml,
// deps with a fake egress answering replies, and the audit log's path.
func allowProject(t *testing.T, yaml string, replies map[string]fakeReply) (dir string, d deps, eg *fakeEgress, log string) {
	t.Helper()
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), []byte("name: demo\nagent: none\n"+yaml))
	state := filepath.Join(t.TempDir(), "state")
	eg = &fakeEgress{t: t, replies: replies}
	d = testDeps()
	d.now = func() time.Time { return allowNow }
	d.egress = eg.run
	d.profile = eg.profile
	d.auditDir = func() (string, error) { return state, nil }
	d.user = func() string { return "alice" }
	return dir, d, eg, filepath.Join(state, "demo.jsonl")
}

func TestAllowRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		args       []string
		code       int
		want       string
	}{
		{"no destination", "", []string{"--for", "1h", "--reason", "r"}, exitUsage, "name a destination: agentbox allow DEST --for DURATION --reason TEXT"},
		{"bad destination", "", []string{"198.18.7.0/33", "--for", "1h", "--reason", "r"}, exitUsage, `invalid destination "198.18.7.0/33": not an address or CIDR (want ADDRESS, CIDR or NAME, then optionally :PORT[,PORT]; an IPv6 one with a port as [2001:2::/48]:443)`},
		{"host bits", "", []string{"198.18.7.1/24", "--for", "1h", "--reason", "r"}, exitUsage, `invalid destination "198.18.7.1/24": host bits are set; did you mean 198.18.7.0/24?`},
		{"bad port", "", []string{"198.18.7.0/24:0", "--for", "1h", "--reason", "r"}, exitUsage, `invalid destination "198.18.7.0/24:0": invalid port 0: must be 1-65535`},
		{"17 ports", "", []string{"198.18.13.5:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "--for", "1h", "--reason", "r"}, exitUsage, `17 ports: a grant names at most 16`},
		{"IPv6 with a port, no brackets", "", []string{"2001:2::1:443x", "--for", "1h", "--reason", "r"}, exitUsage, `invalid destination "2001:2::1:443x": not an address or CIDR`},
		{"missing --for", "", []string{"198.18.13.5", "--reason", "r"}, exitUsage, "--for is required: how long the grant lasts, such as 30m or 1h"},
		{"bad --for", "", []string{"198.18.13.5", "--for", "90d", "--reason", "r"}, exitUsage, `invalid --for: invalid duration "90d": want whole hours, minutes or seconds such as 30m, 4h or 1h30m`},
		{"missing --reason", "", []string{"198.18.13.5", "--for", "1h"}, exitUsage, "--reason is required: say why the sandbox needs 198.18.13.5/32 (it goes to the audit log)"},
		{"blank --reason", "", []string{"198.18.13.5", "--for", "1h", "--reason", "  "}, exitUsage, "--reason is required"},
		{"bad task", "", []string{"198.18.13.5", "--task", "Fix_1", "--for", "1h", "--reason", "r"}, exitUsage, `invalid --task "Fix_1"`},
		{"single-label name", "", []string{"intranet", "--for", "1h", "--reason", "r"}, exitUsage, `invalid destination "intranet": invalid domain "intranet": a domain needs at least two labels`},
		{"bad name", "", []string{"exa_mple.com:443", "--for", "1h", "--reason", "r"}, exitUsage, `invalid destination "exa_mple.com:443": invalid domain "exa_mple.com": character '_' is not allowed`},
		{"wildcard inside", "", []string{"a.*.example.com", "--for", "1h", "--reason", "r"}, exitUsage, `a wildcard may only be the whole first label`},
		{"name, bad port", "", []string{"example.com:0", "--for", "1h", "--reason", "r"}, exitUsage, `invalid destination "example.com:0": invalid port 0: must be 1-65535`},
		{"name never", "elevation:\n  never: [198.18.13.0/24, \"*.corp.example\"]\n", []string{"git.corp.example", "--for", "1h", "--reason", "r"}, exitError, "refusing to grant: git.corp.example overlaps corp.example, which elevation.never forbids (agentbox.yaml:4:27)"},
		{"name above never", "elevation:\n  never: [secret.example.com]\n", []string{"*.example.com:22", "--for", "1h", "--reason", "r"}, exitError, "refusing to grant: example.com overlaps secret.example.com, which elevation.never forbids (agentbox.yaml:4:11)"},
		{"name not allowed", "elevation:\n  allowed: false\n", []string{"example.com", "--for", "1h", "--reason", "r"}, exitError, "elevation is not allowed in profile balanced"},
		{"name over max", "", []string{"example.com", "--for", "2h", "--reason", "r"}, exitError, "--for 2h is over elevation.max_duration 1h (the default)"},
		{"not allowed", "elevation:\n  allowed: false\n", []string{"198.18.13.5", "--for", "1h", "--reason", "r"}, exitError, "elevation is not allowed in profile balanced (elevation.allowed is false at agentbox.yaml:4:12)"},
		{"over the default max", "", []string{"198.18.13.5", "--for", "1h1s", "--reason", "r"}, exitError, "--for 1h1s is over elevation.max_duration 1h (the default)"},
		{"over max", "elevation: {max_duration: 10m}\n", []string{"198.18.13.5", "--for", "11m", "--reason", "r"}, exitError, "--for 11m is over elevation.max_duration 10m (at agentbox.yaml:3:27)"},
		{"everything", "", []string{"0.0.0.0/0", "--for", "1h", "--reason", "r"}, exitError, `refusing to grant: 0.0.0.0/0 overlaps 0.0.0.0/8 ("this" network), which agentbox never grants`},
		{"every IPv6 address", "", []string{"::/0", "--for", "1h", "--reason", "r"}, exitError, `refusing to grant: ::/0 overlaps ::/96 (unspecified, loopback and IPv4-compatible (deprecated, RFC 4291)), which agentbox never grants`},
		{"private", "", []string{"10.1.2.0/24:22", "--for", "1h", "--reason", "r"}, exitError, `refusing to grant: 10.1.2.0/24 overlaps 10.0.0.0/8 (private (RFC 1918)), which agentbox never grants`},
		{"wider than private", "", []string{"172.0.0.0/8", "--for", "1h", "--reason", "r"}, exitError, `refusing to grant: 172.0.0.0/8 overlaps 172.16.0.0/12 (private (RFC 1918)), which agentbox never grants`},
		{"metadata", "", []string{"169.254.169.254:80", "--for", "1h", "--reason", "r"}, exitError, `refusing to grant: 169.254.169.254/32 overlaps 169.254.0.0/16 (link-local, includes cloud metadata at 169.254.169.254), which agentbox never grants`},
		{"CGNAT", "", []string{"100.64.0.1", "--for", "1h", "--reason", "r"}, exitError, `overlaps 100.64.0.0/10 (shared address space, carrier-grade NAT (RFC 6598))`},
		{"loopback", "", []string{"127.0.0.1", "--for", "1h", "--reason", "r"}, exitError, `overlaps 127.0.0.0/8 (loopback)`},
		{"multicast", "", []string{"224.0.0.251", "--for", "1h", "--reason", "r"}, exitError, `overlaps 224.0.0.0/4 (multicast)`},
		{"IPv6 loopback", "", []string{"[::1]:443", "--for", "1h", "--reason", "r"}, exitError, `refusing to grant: ::1/128 overlaps ::/96`},
		{"unique local", "", []string{"fd00::/8", "--for", "1h", "--reason", "r"}, exitError, `refusing to grant: fd00::/8 overlaps fc00::/7 (unique local)`},
		{"IPv6 link-local", "", []string{"fe80::1", "--for", "1h", "--reason", "r"}, exitError, `overlaps fe80::/10 (link-local)`},
		{"IPv6 multicast", "", []string{"ff02::1", "--for", "1h", "--reason", "r"}, exitError, `overlaps ff00::/8 (multicast)`},
		{"NAT64 of private", "", []string{"64:ff9b::a00:1", "--for", "1h", "--reason", "r"}, exitError, `overlaps 64:ff9b::a00:0/104 (10.0.0.0/8 in NAT64 (RFC 6052))`},
		{"documentation", "", []string{"203.0.113.5", "--for", "1h", "--reason", "r"}, exitError, `overlaps 203.0.113.0/24 (documentation (RFC 5737))`},
		{"IPv6 documentation", "", []string{"2001:db8::/48", "--for", "1h", "--reason", "r"}, exitError, `overlaps 2001:db8::/32 (documentation (RFC 3849))`},
		{"Teredo", "", []string{"2001:0:4136:e378:8000:63bf:f5ff:fefe", "--for", "1h", "--reason", "r"}, exitError, `overlaps 2001::/32 (Teredo (RFC 4380)`},
		{"6to4 of documentation", "", []string{"2002:cb00:7105::1", "--for", "1h", "--reason", "r"}, exitError, `overlaps 2002:cb00:7100::/40 (203.0.113.0/24 in 6to4 (RFC 3056))`},
		{"never in NAT64", "elevation:\n  never: [198.18.13.0/24]\n", []string{"64:ff9b::c612:d05", "--for", "1h", "--reason", "r"}, exitError, "refusing to grant: 64:ff9b::c612:d05/128 overlaps 64:ff9b::c612:d00/120 (198.18.13.0/24 in NAT64), which elevation.never forbids (agentbox.yaml:4:11)"},
		{"never in 6to4", "elevation:\n  never: [198.18.13.0/24]\n", []string{"[2002:c612:d05::1]:22", "--for", "1h", "--reason", "r"}, exitError, "refusing to grant: 2002:c612:d05::1/128 overlaps 2002:c612:d00::/40 (198.18.13.0/24 in 6to4), which elevation.never forbids"},
		{"never", "elevation:\n  never: [198.18.13.0/24]\n", []string{"198.18.13.5", "--for", "1h", "--reason", "r"}, exitError, "refusing to grant: 198.18.13.5/32 overlaps 198.18.13.0/24, which elevation.never forbids (agentbox.yaml:4:11)"},
		{"wider than never", "elevation:\n  never: [198.18.13.0/24]\n", []string{"198.18.0.0/16", "--for", "1h", "--reason", "r"}, exitError, "refusing to grant: 198.18.0.0/16 overlaps 198.18.13.0/24, which elevation.never forbids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, d, eg, log := allowProject(t, tc.yaml, nil)
			stdout, stderr, code := runDeps(t, d, append([]string{"allow", "-C", dir}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q", code, stdout, stderr, tc.code, tc.want)
			}
			if len(eg.calls) > 0 {
				t.Errorf("the egress was asked %q", eg.calls)
			}
			// A malformed command line is no grant; a grant that agentbox
			// refuses is recorded, with the refusal as its result.
			if tc.code == exitUsage {
				if _, err := os.Stat(log); err == nil {
					t.Errorf("a command line that was not a grant wrote the audit log")
				}
				return
			}
			recs := readRecords(t, log)
			if len(recs) != 1 || recs[0]["event"] != "grant" || !strings.Contains(fmt.Sprint(recs[0]["result"]), tc.want) || recs[0]["reason"] != "r" {
				t.Errorf("records %v, want one refused grant", recs)
			}
		})
	}
}

// TestAllowNoSandbox: a grant that fails before it reaches the egress (no
// sandbox runs) is recorded with its result.
func TestAllowNoSandbox(t *testing.T) {
	dir, d, eg, log := allowProject(t, "", nil)
	d.profile = func(context.Context, string, string) (string, error) {
		return "", fmt.Errorf("the sandbox is not running (agentbox up starts it)")
	}
	_, stderr, code := runDeps(t, d, "allow", "-C", dir, "203.0.113.5", "--for", "1m", "--reason", "docs")
	if code != exitError || !strings.Contains(stderr, "not running") || len(eg.calls) > 0 {
		t.Errorf("exit %d, calls %q: %s", code, eg.calls, stderr)
	}
	recs := readRecords(t, log)
	if len(recs) != 1 || recs[0]["result"] != "the sandbox is not running (agentbox up starts it)" || recs[0]["destination"] != "203.0.113.5/32" {
		t.Errorf("records %v", recs)
	}
}

// TestAllowProfiles: the running profile's elevation decides; locked
// permits none unless a profile from it says so.
func TestAllowProfiles(t *testing.T) {
	const profiles = `profiles:
  review:
    from: locked
    elevation: {allowed: true, max_duration: 5m}
  lab:
    from: open
    elevation: {allowed: false}
  short:
    from: balanced
    elevation: {max_duration: 5m}
`
	grant := []string{"198.18.13.5", "--for", "10m", "--reason", "r"}
	for _, tc := range []struct {
		name, running, want string
		code                int
	}{
		{"balanced", "balanced", "granted 198.18.13.5/32 ports 443 for 10m", exitOK},
		{"open", "open", "granted 198.18.13.5/32", exitOK},
		{"locked", "locked", "elevation is not allowed in profile locked (a locked profile permits none unless its elevation.allowed says so)", exitError},
		{"custom from locked that allows", "review", "--for 10m is over elevation.max_duration 5m (at agentbox.yaml:6:46)", exitError},
		{"custom from open that does not", "lab", "elevation is not allowed in profile lab (elevation.allowed is false at agentbox.yaml:9:26)", exitError},
		{"custom with its own max", "short", "--for 10m is over elevation.max_duration 5m", exitError},
		{"a profile no longer configured", "gone", `the sandbox runs profile "gone", which agentbox.yaml no longer has`, exitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, d, eg, _ := allowProject(t, profiles, map[string]fakeReply{": grant 198.18.13.5/32 443 600": {}})
			eg.running = tc.running
			stdout, stderr, code := runDeps(t, d, append([]string{"allow", "-C", dir}, grant...)...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout, stderr, tc.code, tc.want)
			}
		})
	}
}

// readRecords reads the audit log at path, each line strictly.
func readRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(string(readBytes(t, path)), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestAllowGrant(t *testing.T) {
	dir, d, eg, log := allowProject(t, "", map[string]fakeReply{
		"fix-1: grant 2001:2::/48 443,8443 1800": {out: "granted 2001:2::/48 443,8443 for 1800 s\n"},
	})
	stdout, stderr, code := runDeps(t, d, "allow", "-C", dir, "--task", "fix-1", "[2001:2::/48]:8443,443,443", "--for", "30m",
		"--reason", "staging API \x1b]0;owned\x07"+strings.Repeat("é", 300))
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "granted 2001:2::/48 ports 443,8443 for 30m, until 2026-11-22T12:30:00Z\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	if len(eg.calls) != 1 {
		t.Errorf("egress calls %q", eg.calls)
	}
	if fi, err := os.Stat(log); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit log: %v, %v", fi, err)
	}
	recs := readRecords(t, log)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	reason := r["reason"].(string)
	if len(reason) > audit.MaxReason || !strings.HasPrefix(reason, "staging API \x1b]0;owned\x07") {
		t.Errorf("reason %q (%d bytes)", reason, len(reason))
	}
	delete(r, "reason")
	abs, _ := filepath.Abs(dir)
	want := map[string]any{"time": "2026-11-22T12:00:00Z", "event": "grant", "user": "alice", "project": abs,
		"sandbox": "demo", "task": "fix-1", "destination": "2001:2::/48", "ports": []any{443.0, 8443.0},
		"duration_seconds": 1800.0, "expires": "2026-11-22T12:30:00Z", "result": "ok"}
	if fmt.Sprint(r) != fmt.Sprint(want) {
		t.Errorf("record\n%v\nwant\n%v", r, want)
	}
}

// TestAllowGrantName: a name (with "*.", a port list) goes to the egress's
// grant-name, lower-cased and without the wildcard, and to the audit log.
func TestAllowGrantName(t *testing.T) {
	dir, d, eg, log := allowProject(t, "elevation:\n  never: [other.example]\n", map[string]fakeReply{
		": grant-name docs.example.com 443 600":      {out: "granted docs.example.com 443 for 600 s\n"},
		": grant-name api.example.com 22,8443 60":    {out: "granted api.example.com 22,8443 for 60 s\n"},
		": revoke-name api.example.com 8443":         {out: "revoked api.example.com 8443\n"},
		"fix-1: grant-name files.example.org 443 60": {out: "granted\n"},
	})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"allow", "-C", dir, "Docs.Example.COM", "--for", "10m", "--reason", "docs"}, "granted docs.example.com ports 443 for 10m, until 2026-11-22T12:10:00Z\n"},
		{[]string{"allow", "-C", dir, "*.api.example.com.:8443,22", "--for", "1m", "--reason", "api"}, "granted api.example.com ports 22,8443 for 1m, until 2026-11-22T12:01:00Z\n"},
		{[]string{"allow", "-C", dir, "--task", "fix-1", "files.example.org", "--for", "1m", "--reason", "f"}, "granted files.example.org ports 443 for 1m, until 2026-11-22T12:01:00Z\n"},
		{[]string{"revoke", "-C", dir, "api.example.com:8443"}, "revoked api.example.com ports 8443\n"},
	} {
		stdout, stderr, code := runDeps(t, d, c.args...)
		if code != 0 || stdout != c.want {
			t.Errorf("%q: exit %d, stdout %q, want %q: %s", c.args, code, stdout, c.want, stderr)
		}
	}
	if len(eg.calls) != 4 {
		t.Errorf("egress calls %q", eg.calls)
	}
	recs := readRecords(t, log)
	if len(recs) != 4 || recs[0]["destination"] != "docs.example.com" || fmt.Sprint(recs[1]["ports"]) != "[22 8443]" ||
		recs[3]["event"] != "revoke" || recs[3]["destination"] != "api.example.com" {
		t.Errorf("records %v", recs)
	}
}

// TestAllowEgressFails: the egress's error is reported and recorded.
func TestAllowEgressFails(t *testing.T) {
	dir, d, _, log := allowProject(t, "", map[string]fakeReply{
		": grant 198.18.13.5/32 443 60": {err: fmt.Errorf("agentbox-egress: nft: no such set")},
	})
	_, stderr, code := runDeps(t, d, "allow", "-C", dir, "198.18.13.5", "--for", "1m", "--reason", "docs")
	if want := "granting 198.18.13.5/32: agentbox-egress: nft: no such set\n"; code != exitError || stderr != want {
		t.Errorf("exit %d, stderr %q, want %q", code, stderr, want)
	}
	recs := readRecords(t, log)
	if len(recs) != 1 || recs[0]["result"] != "agentbox-egress: nft: no such set" || recs[0]["event"] != "grant" {
		t.Errorf("records %v", recs)
	}
}

// TestAllowAuditInsideProject: a state directory inside the project is
// refused before the egress is asked.
func TestAllowAuditInsideProject(t *testing.T) {
	dir, d, eg, _ := allowProject(t, "", nil)
	d.auditDir = func() (string, error) { return filepath.Join(dir, "state"), nil }
	_, stderr, code := runDeps(t, d, "allow", "-C", dir, "198.18.13.5", "--for", "1m", "--reason", "docs")
	if code != exitError || !strings.Contains(stderr, "which the sandbox mounts") || len(eg.calls) > 0 {
		t.Errorf("exit %d, calls %q, stderr %s", code, eg.calls, stderr)
	}
}

func TestAllowList(t *testing.T) {
	dir, d, _, log := allowProject(t, "", map[string]fakeReply{
		": grants": {out: "198.18.7.0/24 443 1795\n198.18.7.0/24 8443 1795\n198.18.13.5 22 59\n"},
	})
	exp := allowNow.Add(1795 * time.Second)
	old := allowNow.Add(-time.Hour)
	for _, r := range []audit.Record{
		{Time: old, Event: audit.Grant, Dest: "198.18.7.0/24", Ports: []uint16{443}, Expires: &old, Reason: "expired grant", Result: audit.OK},
		{Time: allowNow, Event: audit.Grant, Dest: "198.18.7.0/24", Ports: []uint16{443, 8443}, Expires: &exp, Reason: "fixtures \x1b[31m", Result: audit.OK},
		{Time: allowNow, Event: audit.Grant, Dest: "198.18.7.0/24", Ports: []uint16{443}, Expires: &exp, Reason: "refused", Result: "nft failed"},
		{Time: allowNow, Task: "fix-1", Event: audit.Grant, Dest: "198.18.13.5/32", Ports: []uint16{22}, Expires: &exp, Reason: "another task's", Result: audit.OK},
	} {
		if err := audit.Append(log, r); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code := runDeps(t, d, "allow", "-C", dir, "--list")
	want := `DESTINATION     PORT  TIME LEFT  EXPIRES               REASON
198.18.7.0/24   443   29m55s     2026-11-22T12:29:55Z  fixtures \x1b[31m
198.18.7.0/24   8443  29m55s     2026-11-22T12:29:55Z  fixtures \x1b[31m
198.18.13.5/32  22    59s        2026-11-22T12:00:59Z  -
`
	if code != 0 || stdout != want {
		t.Errorf("exit %d: %s\ngot\n%s\nwant\n%s", code, stderr, stdout, want)
	}
	stdout, _, _ = runDeps(t, d, "allow", "-C", dir, "--list", "--json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("%v: %s", err, stdout)
	}
	if got := fmt.Sprint(rows[0]); got != "map[destination:198.18.7.0/24 expires:2026-11-22T12:29:55Z port:443 reason:fixtures \x1b[31m seconds_left:1795]" {
		t.Errorf("JSON row %s", got)
	}
}

func TestAllowListEmpty(t *testing.T) {
	dir, d, _, _ := allowProject(t, "", map[string]fakeReply{"fix-1: grants": {}})
	stdout, stderr, code := runDeps(t, d, "allow", "-C", dir, "--list", "--task", "fix-1")
	if code != 0 || stdout != "no grants\n" {
		t.Errorf("exit %d: %s%s", code, stdout, stderr)
	}
	stdout, _, _ = runDeps(t, d, "allow", "-C", dir, "--list", "--task", "fix-1", "--json")
	if stdout != "[]\n" {
		t.Errorf("--json: %q", stdout)
	}
}

func TestRevoke(t *testing.T) {
	dir, d, eg, log := allowProject(t, "", map[string]fakeReply{
		": revoke 198.18.7.0/24 443": {out: ""},
		": revoke 198.18.13.5/32 22": {err: fmt.Errorf("no such grant")},
	})
	stdout, stderr, code := runDeps(t, d, "revoke", "-C", dir, "198.18.7.0/24")
	if code != 0 || stdout != "revoked 198.18.7.0/24 ports 443\n" {
		t.Errorf("exit %d: %s%s", code, stdout, stderr)
	}
	_, stderr, code = runDeps(t, d, "revoke", "-C", dir, "198.18.13.5:22")
	if code != exitError || stderr != "revoking 198.18.13.5/32: no such grant\n" {
		t.Errorf("exit %d: %s", code, stderr)
	}
	_, stderr, code = runDeps(t, d, "revoke", "-C", dir, "exa_mple.com")
	if code != exitUsage || !strings.Contains(stderr, "invalid domain") || len(eg.calls) != 2 {
		t.Errorf("exit %d, calls %q: %s", code, eg.calls, stderr)
	}
	recs := readRecords(t, log)
	if len(recs) != 2 || recs[0]["event"] != "revoke" || recs[0]["result"] != "ok" || recs[1]["result"] != "no such grant" ||
		recs[0]["expires"] != nil || fmt.Sprint(recs[1]["ports"]) != "[22]" {
		t.Errorf("records %v", recs)
	}
}

func TestAudit(t *testing.T) {
	dir, d, _, log := allowProject(t, "", nil)
	exp := allowNow.Add(-90 * time.Minute)
	for _, r := range []audit.Record{
		{Time: allowNow.Add(-2 * time.Hour), Event: audit.Grant, User: "alice", Sandbox: "demo", Dest: "198.18.7.0/24", Ports: []uint16{443}, Seconds: 1800, Expires: &exp, Reason: "old \x1b[2J", Result: audit.OK},
		{Time: allowNow.Add(-time.Minute), Event: audit.Revoke, User: "bob", Sandbox: "demo", Task: "fix-1", Dest: "198.18.13.5/32", Ports: []uint16{22, 80}, Result: "no such grant"},
	} {
		if err := audit.Append(log, r); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code := runDeps(t, d, "audit", "-C", dir)
	want := `TIME                  EVENT   TASK   DESTINATION     PORTS   FOR  USER   RESULT         REQUEST  REASON
2026-11-22T10:00:00Z  grant   -      198.18.7.0/24   443     30m  alice  ok             -        old \x1b[2J
2026-11-22T10:30:00Z  expire  -      198.18.7.0/24   443     -    -      ok             -        old \x1b[2J
2026-11-22T11:59:00Z  revoke  fix-1  198.18.13.5/32  22, 80  -    bob    no such grant  -        -
`
	if code != 0 || stdout != want {
		t.Errorf("exit %d: %s\ngot\n%s\nwant\n%s", code, stderr, stdout, want)
	}
	stdout, _, _ = runDeps(t, d, "audit", "-C", dir, "--since", "1h", "--json")
	var recs []map[string]any
	if err := json.Unmarshal([]byte(stdout), &recs); err != nil || len(recs) != 1 {
		t.Fatalf("%v: %s", err, stdout)
	}
	if got := fmt.Sprint(recs[0]); got != "map[destination:198.18.13.5/32 event:revoke ports:[22 80] project: result:no such grant sandbox:demo task:fix-1 time:2026-11-22T11:59:00Z user:bob]" {
		t.Errorf("JSON record %s", got)
	}
	stdout, _, _ = runDeps(t, d, "audit", "-C", dir, "--since", "2026-11-22T12:00:00Z")
	if stdout != "no grants or revokes recorded\n" {
		t.Errorf("--since now: %q", stdout)
	}
}

// TestAllowAuditJSONShape checks allow --list --json and audit --json
// against the shapes docs/profiles-and-elevation.md documents.
func TestAllowAuditJSONShape(t *testing.T) {
	readme, err := os.ReadFile("../../docs/profiles-and-elevation.md")
	if err != nil {
		t.Fatal(err)
	}
	dir, d, _, log := allowProject(t, "", map[string]fakeReply{": grants": {out: "198.18.7.0/24 443 1795\n"}})
	exp := allowNow.Add(time.Hour)
	for _, r := range []audit.Record{
		{Time: allowNow, Event: audit.Grant, User: "alice", Dest: "198.18.7.0/24", Ports: []uint16{443}, Seconds: 1800, Expires: &exp, Reason: "r", Result: audit.OK},
		{Time: allowNow, Event: audit.Revoke, User: "alice", Task: "fix-1", Dest: "198.18.13.5/32", Ports: []uint16{22}, Result: audit.OK},
	} {
		if err := audit.Append(log, r); err != nil {
			t.Fatal(err)
		}
	}
	for name, args := range map[string][]string{
		"allow-list": {"allow", "-C", dir, "--list", "--json"},
		"audit":      {"audit", "-C", dir, "--json"},
	} {
		stdout, stderr, code := runDeps(t, d, args...)
		var v any
		if err := json.Unmarshal([]byte(stdout), &v); code != 0 || err != nil {
			t.Fatalf("%s: exit %d, %v: %s", name, code, err, stderr)
		}
		got := map[string]bool{}
		shape(v, "", got)
		delete(got, ": array")
		if want := documentedShape(t, string(readme), name); !slices.Equal(want, sortedKeys(got)) {
			t.Errorf("docs/profiles-and-elevation.md's %s JSON shape:\n%s\nthe output's:\n%s", name, strings.Join(want, "\n"), strings.Join(sortedKeys(got), "\n"))
		}
	}
}

// TestAuditExpiry: agentbox audit shows when each grant ended by itself:
// an expire event at its expiry for the ports that no revoke ended and no
// later grant renewed before it; none for a grant still in force or one
// the egress refused.
func TestAuditExpiry(t *testing.T) {
	dir, d, _, log := allowProject(t, "", nil)
	at := func(m int) time.Time { return allowNow.Add(time.Duration(m) * time.Minute) }
	exp := func(m int) *time.Time { e := at(m); return &e }
	for _, r := range []audit.Record{
		// 443 and 8443 for 10m; 443 revoked at 5m: 8443 expires at 10m.
		{Time: at(-60), Event: audit.Grant, User: "alice", Dest: "198.18.7.0/24", Ports: []uint16{443, 8443}, Seconds: 600, Expires: exp(-50), Reason: "fixtures", Result: audit.OK},
		{Time: at(-55), Event: audit.Revoke, User: "alice", Dest: "198.18.7.0/24", Ports: []uint16{443}, Result: audit.OK},
		// Renewed before its expiry: only the renewal expires.
		{Time: at(-40), Event: audit.Grant, User: "bob", Task: "fix-1", Dest: "example.com", Ports: []uint16{443}, Seconds: 600, Expires: exp(-30), Reason: "docs", Result: audit.OK},
		{Time: at(-35), Event: audit.Grant, User: "bob", Task: "fix-1", Dest: "example.com", Ports: []uint16{443}, Seconds: 600, Expires: exp(-25), Reason: "docs again", Result: audit.OK},
		// Refused by the egress: nothing to expire.
		{Time: at(-20), Event: audit.Grant, User: "bob", Dest: "203.0.113.5/32", Ports: []uint16{22}, Seconds: 60, Expires: exp(-19), Reason: "ssh", Result: "nft failed"},
		// Still in force.
		{Time: at(-1), Event: audit.Grant, User: "alice", Dest: "203.0.113.5/32", Ports: []uint16{22}, Seconds: 600, Expires: exp(9), Reason: "ssh", Result: audit.OK},
	} {
		if err := audit.Append(log, r); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code := runDeps(t, d, "audit", "-C", dir, "--since", "52m")
	want := `TIME                  EVENT   TASK   DESTINATION     PORTS  FOR  USER   RESULT      REQUEST  REASON
2026-11-22T11:10:00Z  expire  -      198.18.7.0/24   8443   -    -      ok          -        fixtures
2026-11-22T11:20:00Z  grant   fix-1  example.com     443    10m  bob    ok          -        docs
2026-11-22T11:25:00Z  grant   fix-1  example.com     443    10m  bob    ok          -        docs again
2026-11-22T11:35:00Z  expire  fix-1  example.com     443    -    -      ok          -        docs again
2026-11-22T11:40:00Z  grant   -      203.0.113.5/32  22     1m   bob    nft failed  -        ssh
2026-11-22T11:59:00Z  grant   -      203.0.113.5/32  22     10m  alice  ok          -        ssh
`
	if code != 0 || stdout != want {
		t.Errorf("exit %d: %s\ngot\n%s\nwant\n%s", code, stderr, stdout, want)
	}
	stdout, _, _ = runDeps(t, d, "audit", "-C", dir, "--json")
	var recs []map[string]any
	if err := json.Unmarshal([]byte(stdout), &recs); err != nil || len(recs) != 8 {
		t.Fatalf("%d records, %v: %s", len(recs), err, stdout)
	}
	if got := fmt.Sprint(recs[2]); got != "map[destination:198.18.7.0/24 event:expire ports:[8443] project: reason:fixtures result:ok sandbox: time:2026-11-22T11:10:00Z user:]" {
		t.Errorf("JSON expire record %s", got)
	}
}

// TestAllowListReasonLateGrant: the egress starts a grant's clock when it
// receives it, seconds after allow recorded it on a loaded machine (the
// e2e saw 2.7 s): the grant in force still finds its reason.
func TestAllowListReasonLateGrant(t *testing.T) {
	dir, d, _, log := allowProject(t, "", map[string]fakeReply{
		": grants": {out: "granted.e2e.test 80 58\n"},
	})
	asked := allowNow.Add(-5 * time.Second) // allow recorded it then; the egress got it 4 s later
	exp := asked.Add(time.Minute)
	if err := audit.Append(log, audit.Record{Time: asked, Event: audit.Grant, Dest: "granted.e2e.test", Ports: []uint16{80}, Expires: &exp, Reason: "late", Result: audit.OK}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runDeps(t, d, "allow", "-C", dir, "--list")
	if code != 0 || !strings.Contains(stdout, "late") {
		t.Errorf("exit %d: %s\n%s", code, stderr, stdout)
	}
}
