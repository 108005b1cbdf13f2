package firewall_test

import (
	"strconv"
	"testing"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// The trust tiers' firewall modes in the lab: locked (firewall.ModeNone,
// lab_none_test.go) and open (firewall.ModeOpen, lab_open_test.go), each
// rendered by firewall.Render and run against a battery adapted to its
// promise. Each test first checks without the firewall that what its
// battery aims at answers (testOpen), so that no refusal is blind.

// newModeLab is newLab with the firewall program rendered for p instead of
// testdata/lab's.
func newModeLab(t *testing.T, p firewall.Policy) *lab {
	t.Helper()
	l := newLab(t)
	files, err := firewall.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	l.files = files
	return l
}

// runAttempts runs each attempt as a subtest.
func runAttempts(t *testing.T, l *lab, attempts []attempt) {
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			l := l.on(t)
			for _, req := range a.setup {
				l.do(req)
			}
			for _, req := range a.reqs {
				if err := a.want(l, l.do(req)); err != nil {
					t.Errorf("%s: %v", describe(req), err)
				}
			}
		})
	}
}

// dnsTypes asks server for name once per type, over UDP and TCP in turn.
func dnsTypes(server, name string, types ...string) []netlab.Request {
	var out []netlab.Request
	for i, typ := range types {
		out = append(out, dnsReq(server, []string{"udp", "tcp"}[i%2], name, typ))
	}
	return out
}

// dials is a connection to each host on each port.
func dials(hosts []string, ports ...int) []netlab.Request {
	var out []netlab.Request
	for _, h := range hosts {
		for _, p := range ports {
			out = append(out, dial(h, p))
		}
	}
	return out
}

// counted checks that each counter went up since before.
func counted(t *testing.T, l *lab, before map[string]int, names ...string) {
	after := l.counters()
	for _, name := range names {
		if after[name] <= before[name] {
			t.Errorf("counter %s: %d packets before the battery, %d after; want more", name, before[name], after[name])
		}
	}
}

// bashAs runs a bash script in the egress container as uid (0: root,
// with the egress container's capabilities) and returns its exit code and
// output.
func bashAs(t *testing.T, p *netlab.Proc, uid int, script string) (int, string) {
	t.Helper()
	argv := netlab.CapArgv(egressCaps)
	if uid != 0 {
		id := strconv.Itoa(uid)
		argv = []string{"setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups", "--inh-caps=-all", "--"}
	}
	out, code, err := p.Enter(append(argv, "bash", "-c", script)...)
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}

// entrypoint runs the entrypoint in the egress container with args, as
// agentbox allow does.
func entrypoint(t *testing.T, p *netlab.Proc, args ...string) (string, int) {
	t.Helper()
	argv := append(netlab.CapArgv(egressCaps), append([]string{firewall.EntrypointPath}, args...)...)
	out, code, err := p.Enter(argv...)
	if err != nil {
		t.Fatal(err)
	}
	return out, code
}
