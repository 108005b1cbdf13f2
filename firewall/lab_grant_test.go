package firewall_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// TestLabGrant: a timed grant (agentbox allow runs the entrypoint's grant
// in the egress container) lets the agent through at once, and the kernel
// takes it back at expiry, established connections included; a revoke ends
// one early; bad grants change nothing.
func TestLabGrant(t *testing.T) {
	l := newLab(t)
	p := l.startReady()
	enter := func(args ...string) (string, int) {
		t.Helper()
		argv := append(netlab.CapArgv(egressCaps), append([]string{firewall.EntrypointPath}, args...)...)
		out, code, err := p.Enter(argv...)
		if err != nil {
			t.Fatal(err)
		}
		return out, code
	}
	l.refuses(unlistedV4, 443)

	start := time.Now()
	if out, code := enter("grant", unlistedV4+"/32", "443", "3"); code != 0 || !strings.Contains(out, "granted") {
		t.Fatalf("grant: exit %d: %s", code, out)
	}
	granted := time.Now() // the kernel's element is there: it expires before granted + 3 s
	l.connects(unlistedV4, 443)
	t.Logf("from grant to the first allowed connection: %v", time.Since(start).Round(time.Millisecond))
	if r := l.do(netlab.Request{Op: "open", ID: "granted", Addr: addr(unlistedV4, 443)}); !r.OK {
		t.Fatalf("opening a connection during the grant: %v", r)
	}
	if r := l.do(netlab.Request{Op: "echo", ID: "granted", Line: "during"}); r.Data != "during" {
		t.Fatalf("echo during the grant: %v", r)
	}
	if out, _ := enter("grants"); !strings.HasPrefix(out, unlistedV4+"/32 443 ") {
		t.Errorf("grants: %q", out)
	}
	l.refuses(unlistedV4, 80) // the grant names its ports

	// The kernel expires the element: new connections are refused and
	// the established one is cut.
	time.Sleep(time.Until(granted.Add(3200 * time.Millisecond)))
	l.refuses(unlistedV4, 443)
	if r := l.do(netlab.Request{Op: "echo", ID: "granted", Line: "after", Timeout: 300 * time.Millisecond}); r.OK {
		t.Errorf("the connection opened during the grant still works after it expired: %v", r)
	}
	if out, _ := enter("grants"); out != "" {
		t.Errorf("grants after expiry: %q", out)
	}

	// A revoke ends a grant early.
	enter("grant", unlistedV4+"/32", "443,8443", "60")
	l.connects(unlistedV4, 443)
	if out, code := enter("revoke", unlistedV4+"/32", "443,8443"); code != 0 {
		t.Fatalf("revoke: exit %d: %s", code, out)
	}
	l.refuses(unlistedV4, 443)

	// Bad grants are refused and change nothing; the special ranges stay
	// refused even when granted.
	for _, args := range [][]string{
		{"grant", "0.0.0.0/0", "443", "60"},
		{"grant", "198.18.0.11/33", "443", "60"},
		{"grant", "198.18.0.11;ls", "443", "60"},
		{"grant", "198.18.0.11/", "443", "60"},
		{"grant", "198.18.0.11", "0", "60"},
		{"grant", "198.18.0.11", "443", "604801"},
		{"grant", "::/0", "443", "60"},
		{"revoke", "198.18.0.11", "443"},
	} {
		if out, code := enter(args...); code != 1 {
			t.Errorf("%v: exit %d, want 1: %s", args, code, out)
		}
	}
	if out, code := enter("grant", privateV4+"/32", "443", "60"); code != 0 {
		t.Fatalf("grant of a private address (the host side refuses it; the kernel must too): %d %s", code, out)
	}
	l.refuses(privateV4, 443)
	l.healthy(p)
}
