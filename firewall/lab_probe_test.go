package firewall_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// What the lab's tests ask of it: the agent's attempts, and what the
// firewall and the internet saw of them.

// do makes the agent attempt req.
func (l *lab) do(req netlab.Request) netlab.Response {
	l.t.Helper()
	r, err := l.agent.Call(req)
	if err != nil {
		l.t.Fatal(err)
	}
	if r.OK && r.Tries > 1 {
		l.t.Logf("%s: answered at try %d", describe(req), r.Tries)
	}
	return r
}

// nft runs nft as root in the sandbox namespace (as `docker compose exec
// egress nft ...` would).
func (l *lab) nft(args ...string) string {
	l.t.Helper()
	out, err := l.lab.Exec(l.sbx, append([]string{"nft"}, args...)...)
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

var counterRE = regexp.MustCompile(`counter (\w+) \{[^}]*?packets (\d+) bytes`)

// counters returns the packets of each named counter of the table.
func (l *lab) counters() map[string]int {
	l.t.Helper()
	m := map[string]int{}
	for _, c := range counterRE.FindAllStringSubmatch(l.nft("list", "counters", "table", "inet", "agentbox"), -1) {
		m[c[1]], _ = strconv.Atoi(c[2])
	}
	return m
}

// setHas reports whether a set of the table holds addr.
func (l *lab) setHas(set, addr string) bool {
	l.t.Helper()
	_, err := l.lab.Exec(l.sbx, "nft", "get", "element", "inet", "agentbox", set, "{ "+addr+" }")
	return err == nil
}

// routedPackets returns how many packets routedV6 sent: none unless
// something reached it.
func (l *lab) routedPackets() int {
	l.t.Helper()
	out, err := l.lab.Exec(l.net, "nft", "list", "chain", "ip6", "netlab", "output")
	if err != nil {
		l.t.Fatal(err)
	}
	m := regexp.MustCompile(`counter packets (\d+)`).FindStringSubmatch(out)
	if m == nil {
		l.t.Fatalf("no counter in:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// events returns what the internet's servers saw from number since on.
func (l *lab) events(since int) []netlab.Event {
	l.t.Helper()
	r, err := l.internet.Call(netlab.Request{Op: "events", Since: since})
	if err != nil {
		l.t.Fatal(err)
	}
	return r.Events
}

func (l *lab) eventCount() int { return len(l.events(0)) }

func addr(host string, port int) string {
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}
