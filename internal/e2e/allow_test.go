//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// testAllow: agentbox allow against a running sandbox. A grant of the
// decoy host (an address the policy does not allow) works within a second,
// is listed, ends by itself at expiry (in the kernel), and a revoke ends
// one early; refused destinations change nothing; the audit log has it all.
func testAllow(e *env, p *project) {
	t := e.t
	env := []string{"XDG_STATE_HOME=" + filepath.Join(e.work, "state")}
	upWithFakeDNS(e, p, nil)
	defer p.agentbox(nil, "down")
	probe := "if timeout 2 bash -c 'exec 3<>/dev/tcp/" + decoyIP + "/80' 2>/dev/null; then echo connected; else echo refused; fi"
	reaches := func() bool {
		return strings.TrimSpace(p.agentbox(nil, "shell", "--", "bash", "-c", probe).stdout) == "connected"
	}
	if reaches() {
		t.Fatalf("the sandbox reaches %s before any grant", decoyIP)
	}

	r := p.agentbox(env, "allow", decoyIP+":80", "--for", "6s", "--reason", "e2e: the decoy, for a moment")
	granted := time.Now()
	if r.failed() {
		t.Fatalf("agentbox allow: %s", r)
	}
	if !reaches() {
		t.Fatalf("the sandbox does not reach %s after the grant", decoyIP)
	}
	e.timed("agentbox allow until the first allowed connection (allow + a probe through agentbox shell)", time.Since(granted)+r.took)
	if r := p.agentbox(env, "allow", "--list"); !strings.Contains(r.stdout, decoyIP) || !strings.Contains(r.stdout, "e2e: the decoy") {
		t.Errorf("agentbox allow --list: %s", r)
	}
	time.Sleep(time.Until(granted.Add(6500 * time.Millisecond)))
	if reaches() {
		t.Errorf("the sandbox still reaches %s after the grant expired", decoyIP)
	}

	benchAllow(e, p, env)
	p.agentbox(env, "allow", decoyIP+":80", "--for", "1m", "--reason", "e2e: to revoke")
	if r := p.agentbox(env, "revoke", decoyIP+":80"); r.failed() {
		t.Errorf("agentbox revoke: %s", r)
	}
	if reaches() {
		t.Errorf("the sandbox reaches %s after the revoke", decoyIP)
	}
	for _, dest := range []string{"10.1.2.3:80", "0.0.0.0/0", "169.254.169.254:80", "[::1]:80"} {
		if r := p.agentbox(env, "allow", dest, "--for", "1m", "--reason", "e2e: must be refused"); r.code != 1 {
			t.Errorf("agentbox allow %s: exit %d, want 1: %s", dest, r.code, r)
		}
	}
	r = p.agentbox(env, "audit", "--json")
	var records []map[string]any
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("agentbox audit --json: %v\n%s", err, r.stdout)
		}
		switch x := v.(type) {
		case []any:
			for _, y := range x {
				if m, ok := y.(map[string]any); ok {
					records = append(records, m)
				}
			}
		case map[string]any:
			records = append(records, x)
		}
	}
	events := ""
	for _, m := range records {
		events += " " + strings.TrimSpace(strings.Join([]string{str(m["event"]), str(m["reason"])}, ":"))
	}
	for _, want := range []string{"grant:e2e: the decoy, for a moment", "grant:e2e: to revoke", "revoke"} {
		if !strings.Contains(events, want) {
			t.Errorf("the audit log lacks %q: %s", want, events)
		}
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// testAllowName: agentbox allow of a name against a running sandbox. The
// fake DNS answers every unlisted name with the decoy host: the name does
// not resolve in the sandbox before the grant, resolves and connects during
// it, and resolves no more and is refused after it expired (in the kernel).
func testAllowName(e *env, p *project) {
	t := e.t
	env := []string{"XDG_STATE_HOME=" + filepath.Join(e.work, "state")}
	if _, err := os.Stat(filepath.Join(p.dir, ".agentbox", "docker-compose.yml")); err != nil {
		bump(e, p, nil) // run alone: Sandbox has not generated the project
	}
	upWithFakeDNS(e, p, nil)
	defer p.agentbox(nil, "down")
	const name = "granted.e2e.test"
	probe := "if getent hosts sub." + name + " >/dev/null && timeout 2 bash -c 'exec 3<>/dev/tcp/" + name + "/80' 2>/dev/null; then echo connected; " +
		"elif getent hosts " + name + " >/dev/null; then echo resolved; else echo nxdomain; fi; " +
		"if timeout 2 bash -c 'exec 3<>/dev/tcp/" + decoyIP + "/80' 2>/dev/null; then echo address-open; fi"
	probeOut := func() string {
		return strings.TrimSpace(p.agentbox(nil, "shell", "--", "bash", "-c", probe).stdout)
	}
	if got := probeOut(); got != "nxdomain" {
		t.Fatalf("before any grant: %q, want nxdomain", got)
	}
	r := p.agentbox(env, "allow", "*."+name+":80", "--for", "8s", "--reason", "e2e: a name, for a moment")
	granted := time.Now()
	if r.failed() {
		t.Fatalf("agentbox allow: %s", r)
	}
	if got := probeOut(); got != "connected\naddress-open" {
		t.Fatalf("during the grant: %q, want connected (the name and one below it)", got)
	}
	e.timed("agentbox allow NAME until the first allowed connection (allow + a probe through agentbox shell)", time.Since(granted)+r.took)
	if r := p.agentbox(env, "allow", "--list"); !strings.Contains(r.stdout, name) || !strings.Contains(r.stdout, "e2e: a name") {
		t.Errorf("agentbox allow --list: %s", r)
	}
	time.Sleep(time.Until(granted.Add(9500 * time.Millisecond)))
	if got := probeOut(); got != "nxdomain" {
		t.Errorf("after the grant expired: %q, want nxdomain and the address refused", got)
	}
	p.agentbox(env, "allow", name+":80", "--for", "1m", "--reason", "e2e: a name to revoke")
	checkStatus(e, p, env, name)
	if r := p.agentbox(env, "revoke", name+":80"); r.failed() {
		t.Errorf("agentbox revoke: %s", r)
	}
	if got := probeOut(); got != "nxdomain" {
		t.Errorf("after the revoke: %q, want nxdomain", got)
	}
	if r := p.agentbox(env, "audit"); !strings.Contains(r.stdout, name) {
		t.Errorf("agentbox audit lacks %s: %s", name, r)
	}
}

// benchAllow measures the time from the start of agentbox allow to the
// first connection that the grant lets through, seen from inside the
// sandbox: a poller there tries the decoy host every 10 ms and prints the
// time of its first success. Five grants (each revoked after), median.
func benchAllow(e *env, p *project, env []string) {
	t := e.t
	poller := `echo ready; while ! timeout 0.2 bash -c 'exec 3<>/dev/tcp/` + decoyIP + `/80' 2>/dev/null; do sleep 0.01; done; echo "connected $EPOCHREALTIME"`
	var ds []time.Duration
	for i := range 5 {
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
		r := p.agentbox(env, "allow", decoyIP+":80", "--for", "1m", "--reason", fmt.Sprintf("e2e: latency %d", i))
		if r.failed() {
			cmd.Process.Kill()
			t.Fatalf("agentbox allow: %s", r)
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
		p.agentbox(env, "revoke", decoyIP+":80")
	}
	e.timed("agentbox allow until the sandbox's first allowed connection, median of 5", median(ds))
}

// checkStatus: agentbox status --json of the sandbox started by compose
// itself (not by agentbox up: whether it runs the generated files is not
// known) shows it up under its profile, and the grant of name in force
// with its reason from the audit log.
func checkStatus(e *env, p *project, env []string, name string) {
	t := e.t
	r := p.agentbox(env, "status", "--json")
	var st struct {
		Up      bool   `json:"up"`
		Profile string `json:"profile"`
		Since   string `json:"since"`
		Files   string `json:"generated_files"`
		Matches *bool  `json:"running_matches_files"`
		Grants  []struct {
			Dest        string `json:"destination"`
			Port        int    `json:"port"`
			SecondsLeft int    `json:"seconds_left"`
			Reason      string `json:"reason"`
		} `json:"grants"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.failed() {
		t.Fatalf("agentbox status --json: %v: %s", err, r)
	}
	ok := st.Up && st.Profile == "balanced" && st.Since != "" && st.Files == "current" && st.Matches == nil && len(st.Grants) == 1
	if ok {
		g := st.Grants[0]
		ok = g.Dest == name && g.Port == 80 && g.SecondsLeft > 30 && g.Reason == "e2e: a name to revoke"
	}
	if !ok {
		t.Errorf("agentbox status --json: %+v\n%s", st, r)
	}
	e.timed("agentbox status (sandbox up, one grant)", r.took)
}
