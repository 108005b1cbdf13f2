package firewall_test

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLabNever: what elevation.never names (testdata/lab: a range of each
// family and never.test) is unreachable during any grant, whatever leads
// there: a grant of the range, of a wider one, of its NAT64 or 6to4 form,
// of a name that resolves into it, of a name that is a CNAME to the never
// name (TestLabNeverChain: to a name below it); and the entrypoint refuses to grant the never name, a name below
// it or above it. Everything it refuses connects without the firewall.
func TestLabNever(t *testing.T) {
	l := newLab(t)
	targets := []string{neverV4, neverV6, neverNAT64, never6to4, neverNamed, neverNamedV6, besideNever}
	t.Run("WithoutFirewall", func(t *testing.T) {
		l := l.on(t)
		for _, a := range targets {
			l.connects(a, 443)
		}
	})
	p := l.startReady()
	before := l.counters()

	t.Run("Addresses", func(t *testing.T) {
		l := l.on(t)
		for _, grant := range []string{neverV4 + "/32", neverV6 + "/128", neverNAT64 + "/128", never6to4 + "/128", "198.19.112.0/23"} {
			if out, code := egressCmd(t, p, "grant", grant, "443", "60"); code != 0 {
				t.Fatalf("grant %s: exit %d: %s", grant, code, out)
			}
		}
		l.connects(besideNever, 443) // the wider grant, beside the never range
		for _, a := range []string{neverV4, neverV6, neverNAT64, never6to4} {
			l.refuses(a, 443)
		}
	})
	t.Run("NamesIntoNeverRanges", func(t *testing.T) {
		l := l.on(t)
		for name, want := range map[string][2]string{
			"intonever.test":  {"A", neverV4},
			"nat64never.test": {"AAAA", neverNAT64},
			"6to4never.test":  {"AAAA", never6to4},
		} {
			if out, code := egressCmd(t, p, "grant-name", name, "443", "60"); code != 0 {
				t.Fatalf("grant-name %s: exit %d: %s", name, code, out)
			}
			if got := l.resolve(name, want[0]); !slices.Equal(got, []string{want[1]}) {
				t.Fatalf("%s %s is %q during its grant, want %s", want[0], name, got, want[1])
			}
			l.refuses(want[1], 443)
		}
		if got := l.resolve("intonever.test", "AAAA"); !slices.Equal(got, []string{neverV6}) {
			t.Fatalf("AAAA intonever.test is %q during its grant", got)
		}
		l.refuses(neverV6, 443)
	})
	t.Run("CNAMEToNeverName", func(t *testing.T) {
		l := l.on(t)
		if out, code := egressCmd(t, p, "grant-name", "cname.test", "443", "60"); code != 0 {
			t.Fatalf("grant-name cname.test: exit %d: %s", code, out)
		}
		// The never filter refuses the answer; the kernel refuses where it
		// leads all the same (never.test's own addresses).
		for _, typ := range []string{"A", "AAAA"} {
			if r := l.do(dnsReq(agentResolver, "udp", "cname.test", typ)); r.Rcode != "REFUSED" {
				t.Errorf("%s cname.test during its grant: %v, want REFUSED", typ, r)
			}
		}
		l.refuses(neverNamed, 443)
		l.refuses(neverNamedV6, 443)
	})
	t.Run("NeverNamesNotGranted", func(t *testing.T) {
		for _, name := range []string{"never.test", "sub.never.test"} {
			out, code := egressCmd(t, p, "grant-name", name, "443", "60")
			if code != 1 || !strings.Contains(out, "elevation.never") {
				t.Errorf("grant-name %s: exit %d: %s, want 1 and elevation.never", name, code, out)
			}
		}
	})
	t.Run("Counted", func(t *testing.T) { counted(t, l.on(t), before, "rejected_never") })
	t.Run("OtherGrantsWork", func(t *testing.T) {
		l := l.on(t)
		if out, code := egressCmd(t, p, "grant-name", "granted.test", "443", "60"); code != 0 {
			t.Fatalf("grant-name: exit %d: %s", code, out)
		}
		if _, ok := eventually(time.Second, func() bool { return l.resolvesTo("granted.test", unlistedV4) }); !ok {
			t.Fatalf("granted.test does not resolve during its grant")
		}
		l.connectsName("granted.test", unlistedV4, 443, addr(unlistedV4, 443))
	})
	l.healthy(p)
}
