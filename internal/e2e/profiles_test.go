//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/firewall"
)

// testProfiles: the trust tiers in Docker. Under locked (agentbox up
// --profile locked, and a task of agentbox run --profile locked) verify
// passes, the agent cannot write the workspace, no name resolves, and
// /output is writable; under open verify passes with the test's own DNS
// answering an unlisted name.
func testProfiles(e *env, p *project) {
	t := e.t
	// The default memory limit (4g): more than one read(2) can fill, so
	// the memory probe must read past 2 GiB to reach it.
	yaml := filepath.Join(p.dir, "agentbox.yaml")
	data, err := os.ReadFile(yaml)
	if err != nil || !strings.Contains(string(data), "\n  memory: 256m\n") {
		t.Fatalf("agentbox.yaml: %v\n%s", err, data)
	}
	if err := os.WriteFile(yaml, []byte(strings.Replace(string(data), "\n  memory: 256m\n", "\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// review: from locked, with the allowed name (a session with network).
	f, err := os.OpenFile(filepath.Join(p.dir, "agentbox.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("profiles:\n  review:\n    from: locked\n    network:\n      domains:\n        - host: " + allowedName + "\n          ports: [80]\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	e.must(runOpt{dir: p.dir}, "git", "-c", "user.name=agentbox e2e", "-c", "user.email=e2e@agentbox.invalid", "commit", "-q", "-am", "profile review")
	bump(e, p, nil)
	e.trackImages(p.name)
	defer e.trackImages(p.name)

	r := p.agentbox(nil, "up", "--profile", "locked")
	e.timed("agentbox up --profile locked (build)", r.took)
	if r.failed() {
		t.Fatalf("agentbox up --profile locked: %s", r)
	}
	defer p.agentbox(nil, "down")
	e.trackImages(p.name)
	rep := verify(e, p, "files/read-only workspace", "files/read-only root", "files/writable output", "network/no name resolves")
	for _, pr := range rep.Probes {
		if pr.Probe == "memory limit" && (pr.Result != "PASS" || pr.Tried != "allocate 4160 MiB") {
			t.Errorf("verify at the default memory limit: %+v", pr)
		}
	}
	lockedPromises(e, func(script string) result {
		return p.agentbox(nil, "shell", "--", "bash", "-c", script)
	})
	staleSandbox(e, p, yaml)
	if r := p.agentbox(nil, "allow", decoyIP+":80", "--for", "1m", "--reason", "e2e: locked refuses"); r.code != 1 || !strings.Contains(r.stderr, "not allowed in profile locked") {
		t.Errorf("agentbox allow under locked: %s", r)
	}
	p.mustAgentbox(nil, "down")
	testProfileVolumes(e, p)

	state := []string{"XDG_STATE_HOME=" + filepath.Join(e.work, "state-profiles")}
	defer p.agentbox(state, "gc")
	lockedPromises(e, func(script string) result {
		r := p.agentbox(state, "run", "--profile", "locked", "--name", "locked-task", "--json", "--", "bash", "-c", script)
		var sum struct {
			BranchStatus string `json:"branch_status"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || !strings.Contains(sum.BranchStatus, "read-only") {
			t.Errorf("the locked task's summary: %v %s", err, r)
		}
		r.stdout = r.stderr // the command's own output goes to stderr under --json
		return r
	})

	if r := p.agentbox(nil, "up", "--profile", "open"); r.failed() {
		t.Fatalf("agentbox up --profile open: %s", r)
	}
	// The test's own DNS (the override) answers every name. By hand, as a
	// Dev Container starts it, mode open does not start without the host's
	// addresses (it would reach the host's public ones); set, even empty,
	// it does.
	open := filepath.Join(p.dir, ".agentbox", "profiles", "open.compose.yml")
	compose := []string{"compose", "-f", open, "-f", p.override, "-p", p.name}
	if r := p.e.run(runOpt{dir: p.dir}, "docker", append(compose, "up", "-d", "--wait")...); !r.failed() {
		t.Errorf("docker compose up (open) without %s started: %s", firewall.HostAddrsEnv, r)
	} else if logs := p.e.run(runOpt{dir: p.dir}, "docker", append(compose, "logs", "egress")...); !strings.Contains(logs.stdout+logs.stderr, "mode open needs the host's addresses") {
		t.Errorf("the egress of mode open without %s did not say why it stopped: %s", firewall.HostAddrsEnv, logs)
	}
	if r := p.e.run(runOpt{dir: p.dir, env: []string{firewall.HostAddrsEnv + "="}}, "docker", append(compose, "up", "-d", "--wait")...); r.failed() {
		t.Fatalf("docker compose up (open, fake DNS): %s", r)
	}
	verify(e, p, "network/every name resolves", "network/public address", "network/metadata", "network/allowed name")
}

// lockedPromises runs a script as the agent under a locked profile (in
// the running sandbox or in a task) and checks its report.
func lockedPromises(e *env, run func(script string) result) {
	t := e.t
	script := `cd /workspace
if touch /workspace/x 2>/dev/null || (: >>.git/HEAD) 2>/dev/null; then echo "LEAK: wrote the workspace"; fi
if getent hosts ` + allowedName + ` >/dev/null || getent hosts ` + unlistedName + ` >/dev/null; then echo "LEAK: a name resolved"; fi
if timeout 2 bash -c 'exec 3<>/dev/tcp/` + webIP + `/80' 2>/dev/null; then echo "LEAK: connected"; fi
git log --oneline -1 >/dev/null && echo CLONE-OK
echo out >/output/result && echo OUTPUT-OK`
	r := run(script)
	out := r.stdout + r.stderr
	if strings.Contains(out, "LEAK") || !strings.Contains(out, "OUTPUT-OK") || !strings.Contains(out, "CLONE-OK") {
		t.Errorf("under locked: %s", r)
	}
}

// testProfileVolumes: what locked wrote to /output (lockedPromises) is not
// in the /output of review, a profile from locked with network: each
// profile's volumes are its own.
func testProfileVolumes(e *env, p *project) {
	t := e.t
	defer func() {
		for _, v := range []string{"review.output", "review.workspace-locked"} {
			quiet(t, "docker", "volume", "rm", p.name+"_"+v)
		}
	}()
	if r := p.agentbox(nil, "up", "--profile", "review"); r.failed() {
		t.Fatalf("agentbox up --profile review: %s", r)
	}
	defer p.agentbox(nil, "down")
	r := p.agentbox(nil, "shell", "--", "bash", "-c", "if [ -e /output/result ]; then echo LEAK: locked output; fi; echo fresh >/output/review && echo REVIEW-OK")
	if out := r.stdout + r.stderr; strings.Contains(out, "LEAK") || !strings.Contains(out, "REVIEW-OK") {
		t.Errorf("under review, a profile from locked with network: %s", r)
	}
	vols := e.run(runOpt{}, "docker", "volume", "ls", "--format", "{{.Name}}").stdout
	for _, v := range []string{p.name + "_output", p.name + "_review.output"} {
		if !strings.Contains(vols, v+"\n") {
			t.Errorf("no volume %s: %s", v, vols)
		}
	}
	p.mustAgentbox(nil, "down")
}

// staleSandbox: once the generated files change, generate and shell say
// that the running sandbox (started by agentbox up) is older; once they
// are back, nothing is said.
func staleSandbox(e *env, p *project, yaml string) {
	t := e.t
	const note = "the running sandbox was started before the generated files last changed"
	data, err := os.ReadFile(yaml)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(data), "\nnetwork:\n  domains:\n", "\nnetwork:\n  domains:\n    - stale.e2e.test\n", 1)
	if changed == string(data) {
		t.Fatalf("agentbox.yaml has no network.domains:\n%s", data)
	}
	if err := os.WriteFile(yaml, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	r := p.agentbox(nil, "generate")
	if r.failed() || !strings.Contains(r.stderr, note) {
		t.Errorf("agentbox generate after a policy change does not say the sandbox is older: %s", r)
	}
	if r := p.agentbox(nil, "shell", "--", "true"); r.failed() || !strings.Contains(r.stderr, note) {
		t.Errorf("agentbox shell with newer files does not say the sandbox is older: %s", r)
	}
	if err := os.WriteFile(yaml, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := p.agentbox(nil, "generate"); r.failed() || strings.Contains(r.stderr, note) {
		t.Errorf("agentbox generate, the files as up started the sandbox: %s", r)
	}
}
