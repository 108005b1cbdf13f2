//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// testPolicy: agentbox policy add against a running sandbox. The fake DNS
// answers every unlisted name with the decoy host: a name added resolves
// and connects at once, the agent container is not restarted, agentbox.yaml
// and the generated files have it (generate --check passes), and policy
// remove takes it out live. Then the benchmark: from the start of policy
// add to the sandbox's first connection to the name, five times, median.
func testPolicy(e *env, p *project) {
	t := e.t
	env := []string{"XDG_STATE_HOME=" + filepath.Join(e.work, "state")}
	if _, err := os.Stat(filepath.Join(p.dir, ".agentbox", "docker-compose.yml")); err != nil {
		bump(e, p, nil) // run alone: Sandbox has not generated the project
	}
	yamlPath := filepath.Join(p.dir, "agentbox.yaml")
	orig, err := os.ReadFile(yamlPath)
	if err != nil {
		t.Fatal(err)
	}
	upWithFakeDNS(e, p, nil)
	defer func() {
		p.agentbox(nil, "down")
		if err := os.WriteFile(yamlPath, orig, 0o644); err != nil {
			t.Error(err)
		}
		if r := p.agentbox(nil, "generate"); r.failed() {
			t.Errorf("agentbox generate after restoring agentbox.yaml: %s", r)
		}
	}()
	agentStart := func() string {
		return strings.TrimSpace(e.docker("inspect", "--format", "{{.State.StartedAt}}", e.container(p.name, "agent")).stdout)
	}
	started := agentStart()
	const name = "policy.e2e.test"
	probe := "if getent hosts " + name + " >/dev/null && timeout 2 bash -c 'exec 3<>/dev/tcp/" + name + "/80' 2>/dev/null; then echo connected; " +
		"elif getent hosts " + name + " >/dev/null; then echo resolved; else echo nxdomain; fi"
	probeOut := func() string {
		return strings.TrimSpace(p.agentbox(nil, "shell", "--", "bash", "-c", probe).stdout)
	}
	if got := probeOut(); got != "nxdomain" {
		t.Fatalf("before policy add: %q, want nxdomain", got)
	}
	r := p.agentbox(env, "policy", "add", name, "--ports", "80")
	if r.failed() || !strings.Contains(r.stdout, "applied "+name+" ports 80 to the running sandbox") {
		t.Fatalf("agentbox policy add: %s", r)
	}
	if got := probeOut(); got != "connected" {
		t.Fatalf("after policy add: %q, want connected", got)
	}
	if now := agentStart(); now != started {
		t.Errorf("the agent container was restarted: started %s, now %s", started, now)
	}
	if data, _ := os.ReadFile(yamlPath); !strings.Contains(string(data), name) {
		t.Errorf("agentbox.yaml lacks %s:\n%s", name, data)
	}
	if r := p.agentbox(nil, "generate", "--check"); r.failed() {
		t.Errorf("agentbox generate --check after policy add: %s", r)
	}
	if r := p.agentbox(env, "policy", "remove", name); r.failed() || !strings.Contains(r.stdout, "removed "+name+" ports 80 from the running sandbox") {
		t.Fatalf("agentbox policy remove: %s", r)
	}
	if got := probeOut(); got != "nxdomain" {
		t.Errorf("after policy remove: %q, want nxdomain", got)
	}
	if r := p.agentbox(env, "audit"); !strings.Contains(r.stdout, "policy-add") || !strings.Contains(r.stdout, "policy-remove") {
		t.Errorf("agentbox audit lacks the policy changes: %s", r)
	}
	benchPolicy(e, p, env)
	if now := agentStart(); now != started {
		t.Errorf("the agent container was restarted: started %s, now %s", started, now)
	}
}

// benchPolicy measures the time from the start of agentbox policy add to
// the first connection to the name it adds, seen from inside the sandbox:
// a poller there resolves and connects every 10 ms and prints the time of
// its first success. Five names (each removed after), median.
func benchPolicy(e *env, p *project, env []string) {
	t := e.t
	var ds []time.Duration
	for i := range 5 {
		name := fmt.Sprintf("p%d.policy.e2e.test", i)
		poller := `echo ready; while ! { getent hosts ` + name + ` >/dev/null && timeout 0.2 bash -c 'exec 3<>/dev/tcp/` + name + `/80'; } 2>/dev/null; do sleep 0.01; done; echo "connected $EPOCHREALTIME"`
		cmd := exec.CommandContext(e.ctx, e.agentbox, "shell", "--", "bash", "-c", poller)
		cmd.Dir = p.dir
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		if !sc.Scan() || sc.Text() != "ready" {
			t.Fatalf("the poller did not start: %q", sc.Text())
		}
		time.Sleep(300 * time.Millisecond) // it has tried, and been refused
		start := time.Now()
		r := p.agentbox(env, "policy", "add", name, "--ports", "80")
		if r.failed() {
			cmd.Process.Kill()
			t.Fatalf("agentbox policy add: %s", r)
		}
		var at float64
		if sc.Scan() {
			fmt.Sscanf(sc.Text(), "connected %f", &at)
		}
		_ = cmd.Wait()
		if at == 0 {
			t.Fatalf("the poller saw no connection")
		}
		ds = append(ds, time.Unix(0, int64(at*1e9)).Sub(start))
		if r := p.agentbox(env, "policy", "remove", name); r.failed() {
			t.Fatalf("agentbox policy remove: %s", r)
		}
	}
	t.Logf("agentbox policy add until the first allowed connection: %v", ds)
	e.timed("agentbox policy add until the sandbox's first allowed connection, median of 5", median(ds))
}
