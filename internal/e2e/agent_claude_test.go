//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/fakemodel"
)

// The real Claude Code in the sandbox (issue 20): agentbox bump resolves its
// npm tree from the npm registry, the agent image installs it with npm ci,
// and it runs against the Anthropic fake, which the test serves on the
// host's address on Docker's default bridge (private, as the gateway wants
// an endpoint it sends a key to in plain HTTP; every container reaches it
// through its default route). agentbox.yaml allows
// that address and port alone, names it in ANTHROPIC_BASE_URL (env:) and
// passes ANTHROPIC_API_KEY to tasks (run.env), which the gateway of the
// task's egress holds: the agent gets a placeholder and the gateway's base
// URL, the fake gets the key.
const (
	claudeKey    = "sk-ant-agentbox-e2e-0123456789abcdef"
	claudePrompt = "Write CLAUDE-FAKE.txt and commit it."
	claudeFile   = "CLAUDE-FAKE.txt"
	claudeMsg    = "claude: add " + claudeFile
	// claudeCommit is what the fake asks Claude Code's Bash tool to run.
	claudeCommit = `printf 'written by claude\n' > ` + claudeFile + ` && git add ` + claudeFile + ` && git commit -q -m '` + claudeMsg + `'`
	// claudeWrite is the direct task's: its .git is read-only, its work
	// lands as an uncommitted change.
	claudeWrite = `printf 'written by claude\n' > ` + claudeFile
	claudeRuns  = 3 // clone tasks timed for the figure (median)
)

// claudeArgs is the claude command line of every part: print mode, with
// no permission flag: the image's managed settings (the catalog's) let it
// run its tools unattended.
var claudeArgs = []string{"claude", "-p", claudePrompt}

// modelServer serves the fake of the part that runs; each part installs a
// fresh one, so its records are its own.
type modelServer struct {
	cur atomic.Pointer[fakemodel.Anthropic]
}

func (m *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.cur.Load().ServeHTTP(w, r) }

func (m *modelServer) next(command string) *fakemodel.Anthropic {
	f := fakemodel.NewAnthropic(command)
	m.cur.Store(f)
	return f
}

// testRealClaude: a claude task through agentbox run (clone and direct), then
// up + shell + fetch, each against the fake model.
func testRealClaude(e *env) {
	t := e.t
	start := time.Now()
	npmProxy := npmRegistryProxy(e, "@anthropic-ai/claude-code")
	nodeImage := pushNodeImage(e, "claude")

	models := &modelServer{}
	models.next(claudeCommit)
	ln, err := net.Listen("tcp", net.JoinHostPort(e.bridgeGW, "0"))
	if err != nil {
		t.Fatalf("listening on the host's address on Docker's default bridge: %v", err)
	}
	srv := &http.Server{Handler: models}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	p := e.newProject("realclaude", "claude")
	yaml := fmt.Sprintf(`# agentbox end-to-end test project: the real Claude Code
version: 1
name: %s
agent: claude
image:
  base: %s
egress:
  image: %s
network:
  cidrs:
    - cidr: %s/32
      ports: [%d]
env:
  ANTHROPIC_BASE_URL: http://%s:%d
run:
  env: [ANTHROPIC_API_KEY]
resources:
  memory: 2g
devcontainer:
  ide: none
kubernetes:
  namespace: default
  registry: %s/agentbox-e2e
`, p.name, nodeImage, e.baseTag, e.bridgeGW, port, e.bridgeGW, port, e.registry)
	if err := os.WriteFile(filepath.Join(p.dir, "agentbox.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	e.must(runOpt{dir: p.dir}, "git", "-c", "user.name=agentbox e2e", "-c", "user.email=e2e@agentbox.invalid", "commit", "-q", "-a", "-m", "claude")

	// bump resolves the package's tree from npm's configured registry;
	// builds fetch it through the proxy on the bridge.
	r := p.mustAgentbox(nil, "bump")
	e.timed("claude: agentbox bump (the real npm registry)", r.took)
	lock, _ := os.ReadFile(filepath.Join(p.dir, "agentbox.lock"))
	version := regexp.MustCompile(`"@anthropic-ai/claude-code":\s*version: "([^"]+)"`).FindSubmatch(lock)
	if version == nil {
		t.Fatalf("agentbox.lock pins no @anthropic-ai/claude-code:\n%s", lock)
	}
	t.Logf("agentbox.lock pins @anthropic-ai/claude-code %s", version[1])
	npm := e.settings(standIns{npm: npmProxy})
	coldBuild(e, p, npm)
	r = p.compose("", nil, npm, "build")
	e.trackImages(p.name)
	if r.failed() {
		t.Fatalf("docker compose build: %s", r)
	}
	e.timed("claude: build the images (npm ci of the real CLI)", r.took)
	r = e.must(runOpt{}, "docker", "image", "ls", "--format", "{{.Size}}", p.name+"-agent")
	t.Logf("the agent image: %s", strings.TrimSpace(r.stdout))
	e.timed("claude: setup (node image, bump, build)", time.Since(start))

	env := []string{"XDG_STATE_HOME=" + filepath.Join(e.work, "state-claude"), "ANTHROPIC_API_KEY=" + claudeKey}
	env = append(env, npm...)
	defer p.agentbox(env, "gc")
	claudeRun(e, p, models, env)
	claudeDirect(e, p, models, env)
	t.Run("Kubernetes", func(t *testing.T) { claudeKube(e.sub(t), p.in(e.sub(t)), models, env) })
}

// claudeKube: one claude task on the test cluster, as a Job. Its egress's
// gateway holds the key (a Secret mounted in egress alone) and sends it to
// agentbox.yaml's ANTHROPIC_BASE_URL, the fake on the host's bridge
// address, which a pod reaches as a host address; the agent's base URL is
// the gateway's, so the task's command sets none of its own.
func claudeKube(e *env, p *project, models *modelServer, env []string) {
	t := e.t
	kubeconfig := requireCluster(e)
	e.must(runOpt{dir: e.root}, "bash", "scripts/k8s/cluster.sh", "trust-registry", e.registry)
	r := p.mustAgentbox(env, "build", "--push")
	e.trackImages(p.name)
	e.timed("claude: agentbox build --push (kube)", r.took)
	env = append(slices.Clone(env), "KUBECONFIG="+kubeconfig)
	fake := models.next(claudeCommit)
	args := append([]string{"run", "--on", "kubernetes", "--name", "kclaude", "--json", "--"}, claudeArgs...)
	r = p.agentbox(env, args...)
	e.timed("claude: agentbox run --on kubernetes -- claude -p", r.took)
	var sum runSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("agentbox run --on kubernetes -- claude: exit %d, summary %q (%v)\n%s", r.code, r.stdout, err, r.stderr)
	}
	checkClaudeTurns(e, fake, r)
	if len(sum.Commits) != 1 || sum.BranchStatus != "new" || len(sum.RefusedNames)+len(sum.RefusedAddresses) > 0 {
		t.Errorf("the summary of the cluster task: %+v", sum)
	}
	checkClaudeCommit(e, p, "refs/heads/agentbox/kclaude")
	if r := p.agentbox(env, "gc"); r.failed() {
		t.Errorf("agentbox gc: %s", r)
	}
}

// claudeRun: agentbox run, the clone workspace, claudeRuns times; the
// median is the figure of a real CLI's task from run to its branch.
func claudeRun(e *env, p *project, models *modelServer, env []string) {
	t := e.t
	var took []time.Duration
	phases := map[string][]time.Duration{}
	for i := range claudeRuns {
		fake := models.next(claudeCommit)
		name := fmt.Sprintf("claude-%d", i)
		r := p.agentbox(env, append([]string{"run", "--name", name, "--json", "--"}, claudeArgs...)...)
		var sum struct {
			runSummary
			Timings map[string]float64 `json:"timings"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
			t.Fatalf("agentbox run -- claude: exit %d, summary %q (%v)\n%s", r.code, r.stdout, err, r.stderr)
		}
		took = append(took, r.took)
		for k, v := range sum.Timings {
			phases[k] = append(phases[k], time.Duration(v*float64(time.Second)))
		}
		checkClaudeTurns(e, fake, r)
		if len(sum.Commits) != 1 || sum.BranchStatus != "new" {
			t.Errorf("the summary of task %s: %+v", name, sum)
		}
		checkClaudeCommit(e, p, "refs/heads/agentbox/"+name)
		if i == 0 {
			t.Logf("task %s refused names %v, addresses %+v", name, sum.RefusedNames, sum.RefusedAddresses)
			r = p.agentbox(env, "blocked", "--task", name, "--json")
			t.Logf("agentbox blocked --task %s: %s", name, r.stdout)
			if len(sum.RefusedNames)+len(sum.RefusedAddresses) > 0 {
				t.Errorf("claude was refused something: names %v, addresses %+v", sum.RefusedNames, sum.RefusedAddresses)
			}
		}
		p.agentbox(env, "rm", name)
	}
	slices.Sort(took)
	var each []string
	for _, d := range took {
		each = append(each, fmt.Sprintf("%.2f", d.Seconds()))
	}
	e.timed(fmt.Sprintf("claude: agentbox run -- claude -p, run to branch (median of %d: %s s)", claudeRuns, strings.Join(each, ", ")), took[len(took)/2])
	for _, k := range slices.Sorted(maps.Keys(phases)) {
		e.timed("  of which "+k+" (median)", median(phases[k]))
	}
}

// claudeDirect: agentbox run --workspace direct; the .git is read-only, so
// the agent's work lands as an uncommitted file in the project.
func claudeDirect(e *env, p *project, models *modelServer, env []string) {
	t := e.t
	fake := models.next(claudeWrite)
	e.must(runOpt{}, "chown", "-R", "1000:1000", p.dir)
	defer e.must(runOpt{}, "chown", "-R", "0:0", p.dir)
	env = append(slices.Clone(env), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
	file := filepath.Join(p.dir, claudeFile)
	defer os.Remove(file)
	// Then the search of the task's sandbox for the key, which only the
	// gateway holds.
	r := p.agentbox(env, append([]string{"run", "--workspace", "direct", "--name", "claude-direct", "--json", "--"}, withKeySearch(claudeArgs, claudeKey)...)...)
	e.timed("claude: agentbox run --workspace direct -- claude -p, then the key search", r.took)
	if r.failed() {
		t.Fatalf("agentbox run --workspace direct -- claude: %s", r)
	}
	checkClaudeTurns(e, fake, r)
	ms := checkKeySearch(e, "claude's direct task", r, true)
	e.timed("  of which the key search", time.Duration(ms)*time.Millisecond)
	if data, err := os.ReadFile(file); err != nil || string(data) != "written by claude\n" {
		t.Errorf("claude's file in the project: %q %v", data, err)
	}
	p.agentbox(env, "rm", "claude-direct")
}

// checkClaudeTurns: the CLI ran the fake's tool call, came back with its
// result and printed the final text; every Messages request carried the
// user's key.
func checkClaudeTurns(e *env, fake *fakemodel.Anthropic, r result) {
	t := e.t
	var paths []string
	for _, q := range fake.Requests() {
		paths = append(paths, q.Method+" "+q.Path)
		if strings.HasPrefix(q.Path, "/v1/messages") && q.Header.Get("x-api-key") != claudeKey {
			t.Errorf("%s %s reached the model with x-api-key %q, want the user's key", q.Method, q.Path, q.Header.Get("x-api-key"))
		}
	}
	t.Logf("the model received: %v; tool results: %q", paths, fake.ToolResults())
	if len(fake.ToolResults()) == 0 || !strings.Contains(r.stdout+r.stderr, fakemodel.AnthropicFinalText) {
		t.Fatalf("claude did not complete the fake's script: %s", r)
	}
}

// checkClaudeCommit: the branch on the host holds the agent's commit.
func checkClaudeCommit(e *env, p *project, ref string) {
	out := e.must(runOpt{dir: p.dir}, "git", "log", "-1", "--format=%s", ref).stdout
	if strings.TrimSpace(out) != claudeMsg {
		e.t.Errorf("%s: last commit %q, want %q", ref, strings.TrimSpace(out), claudeMsg)
	}
	if got := e.must(runOpt{dir: p.dir}, "git", "show", ref+":"+claudeFile).stdout; got != "written by claude\n" {
		e.t.Errorf("%s:%s is %q", ref, claudeFile, got)
	}
	checkAgentIdentityAs(e, p.dir, ref, "Claude Code (agentbox) <claude@agentbox.invalid>")
}

func checkAgentIdentityAs(e *env, dir, rev, want string) {
	out := strings.TrimSpace(e.must(runOpt{dir: dir}, "git", "log", "-1", "--format=%an <%ae>|%cn <%ce>", rev).stdout)
	if out != want+"|"+want {
		e.t.Errorf("the agent's commit %s: author|committer %q, want %q", rev, out, want)
	}
}

func claudeCatalogName(n string) bool {
	for _, d := range []string{"anthropic.com", "claude.ai", "claude.com"} {
		if n == d || strings.HasSuffix(n, "."+d) {
			return true
		}
	}
	return false
}
