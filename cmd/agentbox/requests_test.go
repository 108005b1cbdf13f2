package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// spoolListing is one request as the egress's requests prints it.
func spoolListing(id string, at time.Time, dest string, secs int64, reason string) string {
	return fmt.Sprintf("request %s\nv 1\nid %s\ntime %d\nexpires %d\ndest %s\nseconds %d\nreason %x\n\n",
		id, id, at.Unix(), at.Add(10*time.Minute).Unix(), dest, secs, reason)
}

// TestRequestsApproveDeny: the agent's text reaches the terminal escaped;
// approve grants what allow would, deny answers, both tell the egress.
func TestRequestsApproveDeny(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // no tasks
	asked := allowNow.Add(-time.Minute)
	listing := spoolListing("r0000000000aa", asked, "docs.example.com:443", 600, "read the docs\x1b]0;owned\x07\ttab") +
		spoolListing("r0000000000bb", asked, "198.18.7.9/32:443", 60, "fixtures")
	dir, d, _, log := allowProject(t, "", map[string]fakeReply{
		": requests":                            {out: listing},
		": grant-name docs.example.com 443 600": {},
		fmt.Sprintf(": answer r0000000000aa approved %d ", allowNow.Add(10*time.Minute).Unix()): {},
		fmt.Sprintf(": answer r0000000000bb denied 0 %x", "use the mirror"):                     {},
	})
	stdout, stderr, code := runDeps(t, d, "requests", "-C", dir)
	if code != 0 || strings.ContainsAny(stdout, "\x1b\x07") || !strings.Contains(stdout, `read the docs\x1b]0;owned\x07\ttab`) ||
		!strings.Contains(stdout, "r0000000000bb  -     2026-11-22T11:59:00Z  198.18.7.9/32:443") {
		t.Fatalf("requests: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runDeps(t, d, "requests", "-C", dir, "--json")
	if code != 0 || !strings.Contains(stdout, `"state": "pending"`) || !strings.Contains(stdout, `"reason": "read the docs\u001b]0;owned\u0007\ttab"`) {
		t.Fatalf("requests --json: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runDeps(t, d, "approve", "-C", dir, "r0000000000aa")
	if code != 0 || stdout != "approved r0000000000aa: docs.example.com:443 for the sandbox, until 2026-11-22T12:10:00Z\n" {
		t.Fatalf("approve: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runDeps(t, d, "deny", "-C", dir, "r0000000000bb", "--reason", "use the mirror")
	if code != 0 || stdout != "denied r0000000000bb: 198.18.7.9/32:443 for the sandbox\n" {
		t.Fatalf("deny: exit %d\n%s%s", code, stdout, stderr)
	}
	recs := readRecords(t, log)
	if len(recs) != 2 || recs[0]["event"] != "grant" || recs[0]["request"] != "r0000000000aa" || recs[1]["event"] != "deny" || recs[1]["note"] != "use the mirror" {
		t.Errorf("audit: %+v", recs)
	}
	// The story in agentbox audit: the request, who decided, the grant and
	// its end.
	stdout, _, _ = runDeps(t, d, "audit", "-C", dir)
	for _, want := range []string{
		"grant  -     docs.example.com  443    10m  alice  ok      r0000000000aa asked 2026-11-22T11:59:00Z  read the docs\\x1b]0;owned\\x07\\ttab",
		"deny   -     198.18.7.9/32     443    1m   alice  ok      r0000000000bb asked 2026-11-22T11:59:00Z  fixtures (denied: use the mirror)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("agentbox audit lacks %q:\n%s", want, stdout)
		}
	}
	if _, stderr, code := runDeps(t, d, "approve", "-C", dir, "bogus"); code == 0 || !strings.Contains(stderr, "invalid request ID") {
		t.Errorf("a bad ID: exit %d, %s", code, stderr)
	}
}

// TestAuditTimedOut: a request nobody answered is in agentbox audit, timed
// out at its expiry, though no other command saw it first; once.
func TestAuditTimedOut(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // no tasks
	asked := allowNow.Add(-15 * time.Minute)
	dir, d, _, _ := allowProject(t, "", map[string]fakeReply{
		": requests": {out: spoolListing("r0000000000cc", asked, "docs.example.com:443", 600, "read the docs\x1b[2J")},
	})
	want := "2026-11-22T11:55:00Z  timed-out  -     docs.example.com  443    10m  -     ok      r0000000000cc asked 2026-11-22T11:45:00Z  read the docs\\x1b[2J\n"
	for range 2 {
		stdout, stderr, code := runDeps(t, d, "audit", "-C", dir)
		if code != 0 || !strings.HasSuffix(stdout, want) || strings.Count(stdout, "timed-out") != 1 {
			t.Fatalf("agentbox audit: exit %d, want a line %q\n%s%s", code, want, stdout, stderr)
		}
	}
}

// TestApprovePolicyFlags: a grant's duration and an addition to the
// policy (no end) exclude each other.
func TestApprovePolicyFlags(t *testing.T) {
	dir, d, _, _ := allowProject(t, "", nil)
	_, stderr, code := runDeps(t, d, "approve", "-C", dir, "r0000000000aa", "--for", "1m", "--policy")
	if code != exitUsage || !strings.Contains(stderr, "[for policy] were all set") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
