package firewall_test

import (
	"strings"
	"testing"
	"time"
)

// TestLabPolicyLive: what agentbox policy add applies to a running egress
// (grant and grant-name with 0 seconds) has no end: the name resolves and
// connects at once, stays past the keeper's looks, is no grant (grants
// does not list it), a timed grant of it later does not put an end to it,
// and revoke ends it.
func TestLabPolicyLive(t *testing.T) {
	l := newLab(t)
	p := l.startReady()
	enter := func(args ...string) (string, int) { t.Helper(); return egressCmd(t, p, args...) }
	l.nxdomain("granted.test")

	start := time.Now()
	if out, code := enter("grant-name", "granted.test", "443", "0"); code != 0 || !strings.Contains(out, "until revoked") {
		t.Fatalf("grant-name with 0 seconds: exit %d: %s", code, out)
	}
	if !l.resolvesTo("granted.test", unlistedV4) {
		t.Fatalf("granted.test does not resolve")
	}
	l.connectsName("granted.test", unlistedV4, 443, addr(unlistedV4, 443))
	t.Logf("from grant-name ... 0 to the first connection: %v", time.Since(start).Round(time.Millisecond))
	l.stopped("Host granted.test on port 80", unlistedV4, 80, httpHead("granted.test"))

	// A timed grant of the same name and port leaves it without an end.
	if out, code := enter("grant-name", "granted.test", "443", "1"); code != 0 || !strings.Contains(out, "already") {
		t.Errorf("a timed grant of a name allowed until revoked: exit %d: %s", code, out)
	}
	if out, _ := enter("grants"); out != "" {
		t.Errorf("grants lists what has no end: %q", out)
	}
	if out, _ := enter("policies"); out != "granted.test 443\n" {
		t.Errorf("policies: %q", out)
	}
	time.Sleep(2500 * time.Millisecond) // the keeper looks every second, the timed grant would be over
	if !l.resolvesTo("granted.test", unlistedV4) {
		t.Errorf("granted.test no longer resolves after the keeper's looks")
	}
	l.connectsName("granted.test", unlistedV4, 443, addr(unlistedV4, 443))

	if out, code := enter("revoke-name", "granted.test", "443"); code != 0 {
		t.Fatalf("revoke-name: exit %d: %s", code, out)
	}
	l.refuses(unlistedV4, 443)
	if _, ok := eventually(time.Second, func() bool {
		return l.do(dnsReq(agentResolver, "udp", "granted.test", "A")).Rcode == "NXDOMAIN"
	}); !ok {
		t.Errorf("granted.test still resolves after revoke-name")
	}

	// An address: the same.
	if out, code := enter("grant", unlistedV4+"/32", "443", "0"); code != 0 || !strings.Contains(out, "until revoked") {
		t.Fatalf("grant with 0 seconds: exit %d: %s", code, out)
	}
	l.connectsName("granted.test", unlistedV4, 443, addr(unlistedV4, 443))
	if out, code := enter("grant", unlistedV4+"/32", "443", "1"); code != 0 || !strings.Contains(out, "already") {
		t.Errorf("a timed grant of an address allowed until revoked: exit %d: %s", code, out)
	}
	if out, _ := enter("grant", "198.18.99.0/24", "8443", "60"); !strings.Contains(out, "granted") {
		t.Fatalf("grant: %s", out)
	}
	if out, _ := enter("grants"); !strings.HasPrefix(out, "198.18.99.0/24 8443 ") || strings.Contains(out, unlistedV4) {
		t.Errorf("grants: %q", out)
	}
	if out, _ := enter("policies"); out != unlistedV4+"/32 443\n" {
		t.Errorf("policies: %q", out)
	}
	time.Sleep(1500 * time.Millisecond)
	l.connectsName("granted.test", unlistedV4, 443, addr(unlistedV4, 443))
	if out, code := enter("revoke", unlistedV4+"/32", "443"); code != 0 {
		t.Fatalf("revoke: exit %d: %s", code, out)
	}
	l.refuses(unlistedV4, 443)
	l.healthy(p)
}
