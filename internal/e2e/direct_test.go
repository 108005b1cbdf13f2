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
# Renames: move a git directory's parent, or a masked file's, away and put
# the agent's own in its place.
mv lib/sub lib/sub.moved 2>/dev/null && echo "LEAK: moved a git directory's parent"
mv deploy deploy.moved 2>/dev/null && echo "LEAK: moved a masked file's parent"
echo agent > deploy/.env.prod 2>/dev/null && echo "LEAK: wrote deploy/.env.prod"
# A repository in the container's writable layer, whose path on the host
# mountinfo names, and links to it: a symlink, and a .git file.
upper=$(sed -n 's/.*upperdir=\([^,]*\).*/\1/p' /proc/self/mountinfo | head -n 1)
git init -q /tmp/layer && git -C /tmp/layer config core.fsmonitor "touch /tmp/agentbox-e2e-direct-ran" &&
	ln -s "$upper/tmp/layer" layer-link && mkdir gitfile && echo "gitdir: $upper/tmp/layer/.git" > gitfile/.git && echo "layer links made"
echo "gitdir: $upper/tmp/layer/.git" > lib/sub/.git 2>/dev/null && echo "LEAK: replaced lib/sub/.git"
# A bare repository deeper than PATH_MAX.
mkdir deep && cd deep && perl -e 'for (1..420) { mkdir "d123456789" or die; chdir "d123456789" or die }
	mkdir "objects"; mkdir "refs"; open F, ">HEAD"; print F "ref: refs/heads/main\n"; close F;
	open F, ">config"; print F "[core]\n\tfsmonitor = touch /tmp/agentbox-e2e-direct-ran\n"; close F' && echo "deep made"
echo "direct task done"`

// testDirect: agentbox run --workspace direct works on the project directory
// itself, and nothing the agent writes there runs on the host.
func testDirect(e *env, p *project, env []string) {
	t := e.t
	// The user's embedded repository, staged as a gitlink (git status
	// looks into it), and a masked file below a directory.
	sub := filepath.Join(p.dir, "lib", "sub")
	e.must(runOpt{}, "git", "init", "-q", sub)
	e.must(runOpt{dir: sub}, "git", "-c", "user.name=u", "-c", "user.email=u@agentbox.invalid", "commit", "-q", "--allow-empty", "-m", "sub")
	e.must(runOpt{dir: p.dir}, "git", "add", "lib/sub")
	defer os.RemoveAll(filepath.Join(p.dir, "lib"))
	defer e.must(runOpt{dir: p.dir}, "git", "rm", "-q", "--cached", "-f", "lib/sub")
	prod := filepath.Join(p.dir, "deploy", ".env.prod")
	if err := os.MkdirAll(filepath.Dir(prod), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prod, []byte("TOKEN=PROD\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"deploy", "deep", "gitfile", "layer-link"} {
		defer os.RemoveAll(filepath.Join(p.dir, d))
	}
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
		Workspace    string   `json:"workspace"`
		Quarantined  []string `json:"quarantined"`
		RemovedLinks []string `json:"removed_links"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("agentbox run --workspace direct: exit %d, summary %q (%v)\n%s", r.code, r.stdout, err, r.stderr)
	}
	if strings.Contains(r.stderr, "LEAK") || !strings.Contains(r.stderr, "direct task done") ||
		!strings.Contains(r.stderr, "embedded made") || !strings.Contains(r.stderr, "bare made") ||
		!strings.Contains(r.stderr, "committed as "+agentIdentity+"|"+agentIdentity) ||
		!strings.Contains(r.stderr, "layer links made") || !strings.Contains(r.stderr, "deep made") {
		t.Errorf("the direct task's output:\n%s", r.stderr)
	}
	if data, err := os.ReadFile(filepath.Join(p.dir, "direct-made.txt")); err != nil || string(data) != "direct\n" {
		t.Errorf("the task's file in the project: %q %v", data, err)
	}
	if sum.Workspace != "direct" || !strings.Contains(strings.Join(sum.Uncommitted, "\n"), "direct-made.txt") {
		t.Errorf("the summary: %+v", sum)
	}
	slices.Sort(sum.Quarantined)
	if len(sum.Quarantined) != 4 || !strings.HasPrefix(sum.Quarantined[0], "deep/d123456789/") || len(sum.Quarantined[0]) < 4096 ||
		!slices.Equal(sum.Quarantined[1:], []string{"evil/.git", "gitfile/.git", "pager"}) {
		t.Errorf("disarmed %.200q, want the deep one, evil/.git, gitfile/.git and pager", sum.Quarantined)
	}
	if len(sum.RemovedLinks) != 1 || !strings.HasPrefix(sum.RemovedLinks[0], "layer-link -> /") {
		t.Errorf("removed links %q, want layer-link", sum.RemovedLinks)
	}
	if _, err := os.Lstat(filepath.Join(p.dir, "layer-link")); err == nil {
		t.Error("the link into the container's writable layer is left")
	}
	if data, _ := os.ReadFile(prod); string(data) != "TOKEN=PROD\n" {
		t.Errorf("deploy/.env.prod is now %q", data)
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
	for _, dir := range []string{p.dir, filepath.Join(p.dir, "evil"), filepath.Join(p.dir, "pager"), sub, filepath.Join(p.dir, "gitfile")} {
		e.run(runOpt{dir: dir, env: env[1:]}, "script", "-qec", "git status; git log -1; git config --list", "/dev/null")
	}
	if _, err := os.Stat("/tmp/agentbox-e2e-direct-ran"); err == nil {
		os.Remove("/tmp/agentbox-e2e-direct-ran")
		t.Error("something the direct task planted ran on the host")
	}
	p.agentbox(env, "rm", "direct")
}
