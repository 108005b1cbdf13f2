//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// checkLogin (issue 20): an interactive login's file in the state volume
// survives a rebuild of the agent image; a secret from the user's secrets
// file reaches the sandbox and a task, and is written into no generated
// file, no task file and no image; with run.copy_login a task starts with
// the sandbox's login file and nothing else of its state, and its changes
// to it never reach the sandbox.
func checkLogin(e *env, p *project, stand standIns) {
	t := e.t
	secret := "e2e-secret-" + e.runID
	config := filepath.Join(e.work, "config")
	if err := os.MkdirAll(filepath.Join(config, "agentbox"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(config, "agentbox", "secrets.env"), []byte("E2E_SECRET="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.writeSettings(config, stand)
	env := []string{"XDG_CONFIG_HOME=" + config, "XDG_STATE_HOME=" + filepath.Join(e.work, "state")}
	defer p.agentbox(env, "gc")
	const dir = "/home/agent/.claude"
	login := "login-" + e.runID

	// A login, as claude's /login leaves it, and other state.
	p.mustAgentbox(env, "up")
	p.mustAgentbox(env, "shell", "--", "bash", "-c", "umask 077; echo "+login+" > "+dir+"/.credentials.json; echo history > "+dir+"/history.jsonl")
	p.mustAgentbox(env, "down")
	before := imageID(e, p.name+"-agent")

	// A rebuild: another git identity changes the agent image's last layers.
	yaml, err := os.ReadFile(filepath.Join(p.dir, "agentbox.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	yaml = append(yaml, "git:\n  name: Rebuilt (agentbox)\nsecrets: [E2E_SECRET]\nrun:\n  copy_login: true\n"...)
	if err := os.WriteFile(filepath.Join(p.dir, "agentbox.yaml"), yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	p.mustAgentbox(nil, "generate")
	r := p.mustAgentbox(env, "up")
	e.timed("agentbox up after a change of the agent image (rebuild)", r.took)
	if after := imageID(e, p.name+"-agent"); after == before {
		t.Fatalf("the agent image was not rebuilt (%s)", after)
	}
	if r = p.mustAgentbox(env, "shell", "--", "cat", dir+"/.credentials.json"); strings.TrimSpace(r.stdout) != login {
		t.Errorf("the login file is gone after a rebuild: %s", r)
	}
	if r = p.mustAgentbox(env, "shell", "--", "printenv", "E2E_SECRET"); strings.TrimSpace(r.stdout) != secret {
		t.Errorf("the sandbox lacks the secret from the secrets file: %s", r)
	}

	// A task: the secret, and the login file alone; its change stays its own.
	// (The secret's digest: the task's command and output are kept in
	// files, which must not hold the value.)
	script := "cat " + dir + "/.credentials.json; ls -A " + dir + "; printenv E2E_SECRET | sha256sum; echo changed > " + dir + "/.credentials.json"
	r = p.agentbox(env, "run", "--name", "login", "--", "bash", "-c", script)
	if r.failed() {
		t.Fatalf("agentbox run: %s", r)
	}
	sum := sha256.Sum256([]byte(secret + "\n"))
	if !strings.Contains(r.stdout, login) || !strings.Contains(r.stdout, hex.EncodeToString(sum[:])) || strings.Contains(r.stdout, "history") {
		t.Errorf("the task's state and environment: want the login file and the secret, not the history:\n%s", r)
	}
	if r = p.mustAgentbox(env, "shell", "--", "cat", dir+"/.credentials.json"); strings.TrimSpace(r.stdout) != login {
		t.Errorf("the task changed the sandbox's login file: %s", r)
	}

	// The value is in no file agentbox wrote (generated files, the task's
	// directory) and in no image's configuration.
	for _, root := range []string{p.dir, filepath.Join(e.work, "state")} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), secret) {
				t.Errorf("%s holds the secret's value", path)
			}
			return nil
		})
	}
	for _, img := range []string{p.name + "-agent", p.name + "-egress"} {
		if r := e.run(runOpt{}, "docker", "image", "inspect", img); r.failed() || strings.Contains(r.stdout, secret) {
			t.Errorf("docker image inspect %s: holds the secret or failed: %s", img, r.stderr)
		}
		if r := e.run(runOpt{}, "docker", "history", "--no-trunc", img); strings.Contains(r.stdout, secret) {
			t.Errorf("the history of %s holds the secret", img)
		}
	}
	p.mustAgentbox(env, "down")
}

func imageID(e *env, image string) string {
	r := e.run(runOpt{}, "docker", "image", "inspect", "--format", "{{.Id}}", image)
	if r.failed() {
		e.t.Fatalf("docker image inspect %s: %s", image, r)
	}
	return strings.TrimSpace(r.stdout)
}
