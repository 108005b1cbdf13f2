//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

var requestID = regexp.MustCompile(`(?m)^id: (r[0-9a-f]{12})$`)

// testApprove: the agent asks with agentbox-request inside the sandbox, a
// person (the test) answers with agentbox approve or deny, and the agent
// learns the answer; an approval is allow's grant (the agent's next
// connection passes); requests for what is never granted are refused at
// once; the endpoint limits the requests; the audit log tells the story.
func testApprove(e *env, p *project) {
	t := e.t
	env := []string{"XDG_STATE_HOME=" + filepath.Join(e.work, "state")}
	if _, err := os.Stat(filepath.Join(p.dir, ".agentbox", "docker-compose.yml")); err != nil {
		bump(e, p, nil) // run alone: Sandbox has not generated the project
	}
	upWithFakeDNS(e, p, nil)
	defer p.agentbox(nil, "down")
	// agentbox shell ends 1 when the command failed, and names its status.
	ask := func(args ...string) result {
		return p.agentbox(nil, append([]string{"shell", "--", "agentbox-request"}, args...)...)
	}
	exited := func(r result, code int) bool {
		if code == 0 {
			return r.code == 0
		}
		return r.code == 1 && strings.Contains(r.stderr, fmt.Sprintf("(exit %d)", code))
	}
	probe := "if timeout 2 bash -c 'exec 3<>/dev/tcp/" + decoyIP + "/80' 2>/dev/null; then echo connected; else echo refused; fi"
	reaches := func() bool {
		return strings.TrimSpace(p.agentbox(nil, "shell", "--", "bash", "-c", probe).stdout) == "connected"
	}
	if reaches() {
		t.Fatalf("the sandbox reaches %s before any grant", decoyIP)
	}

	benchApprove(e, p, env)

	// Asked, listed escaped, approved: the agent's next connection passes.
	r := ask(decoyIP+":80", "--reason", "e2e: the decoy \x1b]0;owned\x07", "--for", "1m")
	m := requestID.FindStringSubmatch(r.stdout)
	if !exited(r, 3) || m == nil || !strings.Contains(r.stdout, "state: pending") {
		t.Fatalf("agentbox-request: %s", r)
	}
	id := m[1]
	if r := p.agentbox(env, "requests"); !strings.Contains(r.stdout, id) || strings.Contains(r.stdout, "\x1b") ||
		!strings.Contains(r.stdout, `e2e: the decoy \x1b]0;owned\x07`) || !strings.Contains(r.stdout, "pending") {
		t.Errorf("agentbox requests: %s", r)
	}
	if reaches() {
		t.Fatalf("the sandbox reaches %s before the approval", decoyIP)
	}
	if r := p.agentbox(env, "approve", id); r.failed() || !strings.Contains(r.stdout, "approved "+id) {
		t.Fatalf("agentbox approve: %s", r)
	}
	if !reaches() {
		t.Fatalf("the sandbox does not reach %s after the approval", decoyIP)
	}
	if r := ask("--status", id); !exited(r, 0) || !strings.Contains(r.stdout, "state: approved\nuntil: ") {
		t.Errorf("the agent's status after the approval: %s", r)
	}
	if r := p.agentbox(env, "approve", id); !r.failed() {
		t.Errorf("approved twice: %s", r)
	}
	p.agentbox(env, "revoke", decoyIP+":80")

	// Denied: the agent learns why, and the sandbox stays closed.
	r = ask(decoyIP+":80", "--reason", "e2e: to deny", "--for", "1m")
	id = requestID.FindStringSubmatch(r.stdout)[1]
	if r := p.agentbox(env, "deny", id, "--reason", "use the fixtures"); r.failed() {
		t.Fatalf("agentbox deny: %s", r)
	}
	if r := ask("--status", id); !exited(r, 1) || !strings.Contains(r.stdout, "state: denied\nnote: use the fixtures") {
		t.Errorf("the agent's status after the denial: %s", r)
	}
	if reaches() {
		t.Errorf("the sandbox reaches %s after a denial", decoyIP)
	}

	// Added to the policy instead of a grant: agentbox.yaml lists it, the
	// running sandbox takes it live, the agent reads approved with no end.
	r = ask(decoyIP+":80", "--reason", "e2e: for good", "--for", "1m")
	pid := requestID.FindStringSubmatch(r.stdout)[1]
	if r := p.agentbox(env, "approve", pid, "--policy"); r.failed() || !strings.Contains(r.stdout, "added to agentbox.yaml's allowlist") {
		t.Fatalf("agentbox approve --policy: %s", r)
	}
	if yaml, _ := os.ReadFile(filepath.Join(p.dir, "agentbox.yaml")); !strings.Contains(string(yaml), decoyIP+"/32") {
		t.Errorf("agentbox.yaml after approve --policy:\n%s", yaml)
	}
	if !reaches() {
		t.Errorf("the sandbox does not reach %s after approve --policy", decoyIP)
	}
	if r := ask("--status", pid); !exited(r, 0) || !strings.Contains(r.stdout, "state: approved\nnote: added to agentbox.yaml") {
		t.Errorf("the agent's status after approve --policy: %s", r)
	}
	if r := p.agentbox(env, "policy", "remove", decoyIP+"/32"); r.failed() || reaches() {
		t.Errorf("agentbox policy remove after approve --policy: %s", r)
	}

	// Never granted: refused at once, nothing spooled.
	for _, dest := range []string{"10.1.2.3:80", "169.254.169.254:80", "[::1]:80", "0.0.0.0/0"} {
		if r := ask(dest, "--reason", "e2e: must be refused", "--for", "1m"); !exited(r, 1) || !strings.Contains(r.stdout, "state: refused") {
			t.Errorf("agentbox-request %s: %s", dest, r)
		}
	}
	// The limits: at most 5 waiting, 10 in 10 minutes.
	limited := false
	for i := 0; i < 12 && !limited; i++ {
		r := ask(fmt.Sprintf("limit%d.e2e.test", i), "--reason", "e2e: the limit", "--for", "1m")
		limited = exited(r, 2) && strings.Contains(r.stderr, "at most")
	}
	if !limited {
		t.Errorf("the endpoint took 12 requests in a row")
	}

	approveTask(e, p, env, reaches)

	// The audit log: the request's grant (its ID, reason, the host user),
	// the denial.
	r = p.agentbox(env, "audit", "--json")
	for _, want := range []string{`"request": "` + id + `"`, `"request": "` + pid + `"`, `"event": "policy-add"`, `"event": "deny"`, `"note": "use the fixtures"`, `"reason": "e2e: the decoy \u001b]0;owned\u0007"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("agentbox audit --json lacks %s:\n%s", want, r.stdout)
		}
	}
}

// benchApprove measures an approval until the agent's first allowed
// connection, median of 5: the agent asks (agentbox-request, through
// agentbox shell), a poller in the sandbox tries the decoy every 10 ms,
// and agentbox approve runs.
func benchApprove(e *env, p *project, env []string) {
	t := e.t
	poller := `echo ready; while ! timeout 0.2 bash -c 'exec 3<>/dev/tcp/` + decoyIP + `/80' 2>/dev/null; do sleep 0.01; done; echo "connected $EPOCHREALTIME"`
	var asks, approvals []time.Duration
	for i := range 5 {
		r := p.agentbox(nil, "shell", "--", "agentbox-request", decoyIP+":80", "--reason", fmt.Sprintf("e2e: latency %d", i), "--for", "1m")
		m := requestID.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("agentbox-request: %s", r)
		}
		asks = append(asks, r.took)
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
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		if r := p.agentbox(env, "approve", m[1]); r.failed() {
			cmd.Process.Kill()
			t.Fatalf("agentbox approve: %s", r)
		}
		var at float64
		if sc.Scan() {
			fmt.Sscanf(sc.Text(), "connected %f", &at)
		}
		_ = cmd.Wait()
		if at == 0 {
			t.Fatalf("the poller saw no connection")
		}
		approvals = append(approvals, time.Unix(0, int64(at*1e9)).Sub(start))
		p.agentbox(env, "revoke", decoyIP+":80")
	}
	e.timed("agentbox-request in the sandbox (through agentbox shell), median of 5", median(asks))
	e.timed("agentbox approve until the sandbox's first allowed connection, median of 5", median(approvals))
}

// approveTask: a request from a task is listed with the task, and its
// approval opens that task's egress only.
func approveTask(e *env, p *project, env []string, sandboxReaches func() bool) {
	t := e.t
	if r := p.agentbox(env, "run", "--name", "asker", "--detach", "--timeout", "5m", "--", "sleep", "600"); r.failed() {
		t.Fatalf("agentbox run --detach asker: %s", r)
	}
	defer func() {
		p.agentbox(env, "stop", "asker")
		p.agentbox(env, "rm", "asker")
	}()
	ag := e.container(p.name+"-task-asker", "agent")
	var r result
	waitFor(10*time.Second, func() bool { // the task's egress may still start its endpoint
		r = e.run(runOpt{}, "docker", "exec", ag, "agentbox-request", decoyIP+":80", "--reason", "e2e: a task asks", "--for", "1m")
		return r.code != 2
	})
	m := requestID.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("agentbox-request in the task: %s", r)
	}
	if r := p.agentbox(env, "requests", "--json"); !strings.Contains(r.stdout, `"task": "asker"`) || !strings.Contains(r.stdout, m[1]) {
		t.Errorf("agentbox requests --json does not list the task's request: %s", r)
	}
	if r := p.agentbox(env, "approve", m[1]); r.failed() || !strings.Contains(r.stdout, "for task asker") {
		t.Fatalf("agentbox approve of the task's request: %s", r)
	}
	// The grant is in the task's egress (a task's network does not reach
	// the fake internet's decoy here: the sandbox's probe shows the kernel
	// side), not in the sandbox's.
	if r := p.agentbox(env, "allow", "--list", "--task", "asker"); !strings.Contains(r.stdout, decoyIP+"/32") || !strings.Contains(r.stdout, "e2e: a task asks") {
		t.Errorf("agentbox allow --list --task asker lacks the approved grant: %s", r)
	}
	if r := p.agentbox(env, "allow", "--list"); strings.Contains(r.stdout, decoyIP) {
		t.Errorf("the task's approval granted the sandbox too: %s", r)
	}
	if sandboxReaches() {
		t.Errorf("the task's approval opened the sandbox too")
	}
}
