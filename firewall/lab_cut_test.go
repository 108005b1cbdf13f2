package firewall_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// TestLabGrantCut: a connection that a grant let through fails at once when
// the grant ends (expiry or revoke, an address or a name): the agent's next
// packet gets the firewall's reset, which must reach its socket, rather than
// being dropped while the socket retransmits into the refused-packet log.
func TestLabGrantCut(t *testing.T) {
	testenv.RequireProgram(t, "ulogd")
	l := newLab(t)
	p := l.startReady()
	if _, _, ok := p.Log().Await(0, "refused packets are logged", 5*time.Second); !ok {
		t.Fatalf("the entrypoint did not start the logger; its output:\n%s", p.Output())
	}
	for _, c := range []struct {
		name         string
		grant, after []string // the grant, and what ends it ("" waits for expiry)
	}{
		{"AddressExpiry", []string{"grant", unlistedV4 + "/32", "443", "2"}, nil},
		{"AddressRevoke", []string{"grant", unlistedV4 + "/32", "443", "60"}, []string{"revoke", unlistedV4 + "/32", "443"}},
		{"NameExpiry", []string{"grant-name", "cut.test", "443", "2"}, nil},
		{"NameRevoke", []string{"grant-name", "cut.test", "443", "60"}, []string{"revoke-name", "cut.test", "443"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := l.on(t)
			if out, code := egressCmd(t, p, c.grant...); code != 0 {
				t.Fatalf("%q: exit %d: %s", c.grant, code, out)
			}
			granted := time.Now()
			if c.grant[0] == "grant-name" {
				took, ok := eventually(3*time.Second, func() bool { return l.resolvesTo("cut.test", unlistedV4) })
				if !ok {
					t.Fatalf("cut.test does not resolve during its grant")
				}
				if took > 100*time.Millisecond {
					t.Logf("cut.test resolved %v after grant-name", took)
				}
			}
			id := "cut-" + c.name
			if r := l.do(netlab.Request{Op: "open", ID: id, Addr: addr(unlistedV4, 443), Chunks: [][]byte{helloLine("cut.test")}}); !r.OK {
				t.Fatalf("opening a connection during the grant: %v", r)
			}
			if r := l.do(netlab.Request{Op: "echo", ID: id, Line: "during"}); r.Data != "during" {
				t.Fatalf("echo during the grant: %v", r)
			}
			from := len(p.Log().Lines())
			if c.after != nil {
				if out, code := egressCmd(t, p, c.after...); code != 0 {
					t.Fatalf("%q: exit %d: %s", c.after, code, out)
				}
			} else {
				time.Sleep(time.Until(granted.Add(2300 * time.Millisecond)))
			}
			r := l.do(netlab.Request{Op: "echo", ID: id, Line: "after", Timeout: 5 * time.Second})
			// A name's connection goes through the gateway, whose connection
			// the kernel resets; HAProxy then closes the agent's (EOF).
			cut := r.Errno == "ECONNRESET" || (c.grant[0] == "grant-name" && r.Errno == "EOF")
			if r.OK || !cut || r.Elapsed > time.Second {
				t.Errorf("echo after the grant ended: %v, want ECONNRESET (EOF through the gateway) within 1 s", r)
			}
			l.do(netlab.Request{Op: "close", ID: id})
			records := func() int {
				n := 0
				for _, d := range l.refusedDests(p, from) {
					if d.Addr == netip.MustParseAddr(unlistedV4) && d.Reason == "expired" {
						n += d.Count
					}
				}
				return n
			}
			eventually(2*time.Second, func() bool { return records() > 0 })
			time.Sleep(time.Second) // what else would come
			n := records()
			if n < 1 || n > 1 {
				t.Errorf("%d records of the cut connection in the refused-packet log, want 1: %+v", n, l.refusedDests(p, from))
			}
		})
	}
	l.healthy(p)
}
