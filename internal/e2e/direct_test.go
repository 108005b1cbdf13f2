//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// directScript is a direct task's agent: it does real work on the project
// and tries every way it has to plant code that the host's git or tools
// would run, or to read a hidden secret. Each attempt that works prints LEAK.
const directScript = `cd /workspace
echo direct > direct-made.txt
echo "[core] fsmonitor = touch /tmp/agentbox-e2e-direct-ran" >> .git/config 2>/dev/null && echo "LEAK: .git/config"
touch .git/hooks/post-checkout 2>/dev/null && echo "LEAK: .git/hooks"
mv .git .git-old 2>/dev/null && echo "LEAK: renamed .git"
mkdir -p .vscode 2>/dev/null; echo '{}' > .vscode/tasks.json 2>/dev/null && echo "LEAK: .vscode"
echo 'touch /tmp/agentbox-e2e-direct-ran' > .envrc 2>/dev/null && echo "LEAK: .envrc"
rm -f .envrc 2>/dev/null && [ ! -e .envrc ] && echo "LEAK: removed the .envrc guard"
grep -q SECRET .env 2>/dev/null && echo "LEAK: read .env"
echo tampered > .env 2>/dev/null && echo "LEAK: wrote .env"
git init -q evil && git -C evil config core.fsmonitor "touch /tmp/agentbox-e2e-direct-ran" && echo "embedded made"
git -C evil commit -q --allow-empty -m "the agent commits" && git -C evil log -1 --format="committed as %an <%ae>|%cn <%ce>"
git init -q --bare pager && git -C pager config core.pager "touch /tmp/agentbox-e2e-direct-ran; cat" && echo "bare made"
echo "direct task done"`

// testDirect: agentbox run --workspace direct works on the project directory
// itself, and nothing the agent writes there runs on the host.
func testDirect(e *env, p *project, env []string) {
	t := e.t
	// The agent writes the user's files as its own uid: the project is
	// the agent's user's here, and root's git trusts it.
	e.must(runOpt{}, "chown", "-R", "1000:1000", p.dir)
	defer e.must(runOpt{}, "chown", "-R", "0:0", p.dir)
	env = append(slices.Clone(env), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
	secret := filepath.Join(p.dir, ".env")
	if err := os.WriteFile(secret, []byte("TOKEN=SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(secret)
	defer os.RemoveAll(filepath.Join(p.dir, "evil"))
	defer os.RemoveAll(filepath.Join(p.dir, "pager"))
	defer os.Remove(filepath.Join(p.dir, "direct-made.txt"))

	r := p.agentbox(env, "run", "--workspace", "direct", "--name", "direct", "--json", "--", "bash", "-c", directScript)
	var sum struct {
		runSummary
		Workspace   string   `json:"workspace"`
		Quarantined []string `json:"quarantined"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("agentbox run --workspace direct: exit %d, summary %q (%v)\n%s", r.code, r.stdout, err, r.stderr)
	}
	if strings.Contains(r.stderr, "LEAK") || !strings.Contains(r.stderr, "direct task done") ||
		!strings.Contains(r.stderr, "embedded made") || !strings.Contains(r.stderr, "bare made") ||
		!strings.Contains(r.stderr, "committed as "+agentIdentity+"|"+agentIdentity) {
		t.Errorf("the direct task's output:\n%s", r.stderr)
	}
	if data, err := os.ReadFile(filepath.Join(p.dir, "direct-made.txt")); err != nil || string(data) != "direct\n" {
		t.Errorf("the task's file in the project: %q %v", data, err)
	}
	if sum.Workspace != "direct" || !strings.Contains(strings.Join(sum.Uncommitted, "\n"), "direct-made.txt") {
		t.Errorf("the summary: %+v", sum)
	}
	slices.Sort(sum.Quarantined)
	if !slices.Equal(sum.Quarantined, []string{"evil/.git", "pager"}) {
		t.Errorf("disarmed %v, want evil/.git and pager", sum.Quarantined)
	}
	for _, gone := range []string{".vscode", ".envrc", ".claude", "agentbox.lock.x"} {
		if _, err := os.Lstat(filepath.Join(p.dir, gone)); err == nil && gone != "agentbox.lock.x" {
			t.Errorf("%s is left in the project (a placeholder's mount point)", gone)
		}
	}
	if data, _ := os.ReadFile(secret); string(data) != "TOKEN=SECRET\n" {
		t.Errorf(".env is now %q", data)
	}
	// The user's git, in the project and in what the agent made.
	for _, dir := range []string{p.dir, filepath.Join(p.dir, "evil"), filepath.Join(p.dir, "pager")} {
		e.run(runOpt{dir: dir, env: env[1:]}, "script", "-qec", "git status; git log -1; git config --list", "/dev/null")
	}
	if _, err := os.Stat("/tmp/agentbox-e2e-direct-ran"); err == nil {
		os.Remove("/tmp/agentbox-e2e-direct-ran")
		t.Error("something the direct task planted ran on the host")
	}
	p.agentbox(env, "rm", "direct")
}
