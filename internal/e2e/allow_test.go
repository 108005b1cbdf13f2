//go:build e2e

package e2e

import (
	"encoding/json"
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

	p.agentbox(env, "allow", decoyIP+":80", "--for", "1m", "--reason", "e2e: to revoke")
	if r := p.agentbox(env, "revoke", decoyIP+":80"); r.failed() {
		t.Errorf("agentbox revoke: %s", r)
	}
	if reaches() {
		t.Errorf("the sandbox reaches %s after the revoke", decoyIP)
	}
	for _, dest := range []string{"10.1.2.3:80", "0.0.0.0/0", "169.254.169.254:80", "example.com"} {
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
