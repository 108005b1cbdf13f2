//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/generator"
)

// netProbe prints the agent's network interfaces (from /proc/net/dev) and
// whether the allowed name connects.
const netProbe = `ifs=$(awk -F: 'NR > 2 {gsub(/ /, "", $1); printf "%s ", $1}' /proc/net/dev)
echo "interfaces: $ifs"
if timeout 3 bash -c 'exec 3<>/dev/tcp/` + allowedName + `/80' 2>/dev/null; then echo "allowed: connected"; else echo "allowed: failed"; fi`

// testRestart: the agent joins the egress container's network namespace.
// When compose restarts egress, compose recreates the agent with it
// (depends_on restart: true) and the sandbox works again. When the engine
// alone restarts egress (docker restart, or a restart policy), the agent is
// left in the old namespace with loopback only: no network at all, fail
// closed; compose up then brings it back.
func testRestart(e *env, p *project) {
	t := e.t
	ensureUp(e, p)
	probe := func(when string) string {
		r := p.mustAgentbox(nil, "shell", "--", "bash", "-c", netProbe)
		t.Logf("%s:\n%s", when, r.stdout)
		return r.stdout
	}
	if out := probe("before"); !strings.Contains(out, "allowed: connected") {
		t.Fatalf("the sandbox does not work before the restarts")
	}

	r := p.compose("", []string{p.override}, nil, "restart", "egress")
	if r.failed() {
		t.Fatalf("docker compose restart egress: %s", r)
	}
	e.timed("docker compose restart egress (the agent follows)", r.took)
	if p.compose("", []string{p.override}, nil, "up", "-d", "--wait").failed() {
		t.Fatalf("the sandbox is not healthy after compose restart egress")
	}
	if out := probe("after docker compose restart egress"); !strings.Contains(out, "allowed: connected") {
		t.Errorf("after docker compose restart egress the agent has no working network")
	}
	verify(e, p, coreProbes...)

	// The engine restarts egress on its own: the agent keeps a namespace
	// with loopback only. The sandbox as generated (agentbox up, no test
	// override), so that agentbox up itself has nothing to change but the
	// agent's namespace. Its programs removed first, as a fresh clone has
	// none (they are not committed): agentbox up writes them again, and
	// the images' builds take them by their pinned sums.
	for _, dir := range []string{generator.EgressProgramDir, generator.AgentProgramDir} {
		entries, err := os.ReadDir(filepath.Join(p.dir, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range entries {
			if f.Name() != ".gitignore" {
				if err := os.Remove(filepath.Join(p.dir, dir, f.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	p.mustAgentbox(nil, "up")
	if _, err := os.Stat(filepath.Join(p.dir, generator.EgressProgramDir, "entrypoint.sh")); err != nil {
		t.Errorf("agentbox up did not write the egress program: %v", err)
	}
	if out := probe("agentbox up (as generated)"); !strings.Contains(out, "eth0") {
		t.Fatalf("the agent has no network after agentbox up")
	}
	e.docker("restart", "-t", "1", e.container(p.name, "egress"))
	out := probe("after docker restart of the egress container")
	if ifs := strings.TrimSpace(strings.SplitN(strings.SplitN(out, "interfaces: ", 2)[1], "\n", 2)[0]); ifs != "lo" {
		t.Errorf("after the engine restarted egress the agent has interfaces %q; want loopback only (fail closed)", ifs)
	}
	r = p.mustAgentbox(nil, "up")
	e.timed("agentbox up after the engine restarted egress", r.took)
	if !strings.Contains(r.stderr, "recreating the agent") {
		t.Errorf("agentbox up did not say it recreates the agent:\n%s", tail(r.stderr, 10))
	}
	if out := probe("after agentbox up"); !strings.Contains(out, "eth0") {
		t.Errorf("agentbox up did not bring the agent's network back:\n%s", out)
	}
	p.mustAgentbox(nil, "down")
}
