//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentbox-dev/agentbox/internal/fakemodel"
)

// The real Gemini CLI in the sandbox (issue 20): agentbox bump resolves its
// npm tree from the npm registry, the agent image installs it with npm ci,
// and a task of agentbox run runs it against the fake Gemini API, served on
// the host's address on Docker's default bridge (private, as the gateway
// wants an endpoint it sends a key to in plain HTTP). agentbox.yaml allows that address and port alone, names it in
// GOOGLE_GEMINI_BASE_URL (env:) and passes GEMINI_API_KEY to the sandbox
// and tasks (secrets), which the gateway holds (the agent gets a
// placeholder and the gateway's base URL); the image's generated settings
// do the rest.
const (
	geminiKey    = "agentbox-e2e-gemini-key-0123456789"
	geminiFile   = "GEMINI-FAKE.txt"
	geminiMsg    = "gemini: add " + geminiFile
	geminiFinal  = "Committed " + geminiFile + "."
	geminiAuthor = "Gemini CLI (agentbox) <gemini@agentbox.invalid>"
)

// geminiModels serves the fake of the part that runs; each part installs a
// fresh one, so that its records are its own.
type geminiModels struct {
	cur atomic.Pointer[fakemodel.Gemini]
}

func (m *geminiModels) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.cur.Load().ServeHTTP(w, r)
}

// next installs a fake whose model has the CLI write geminiFile in dir and
// then run command.
func (m *geminiModels) next(dir, command string) *fakemodel.Gemini {
	f := fakemodel.NewGemini(
		fakemodel.GeminiStep{Calls: []fakemodel.GeminiCall{{Name: "write_file", Args: map[string]any{
			"file_path": dir + "/" + geminiFile, "content": "written by gemini\n"}}}},
		fakemodel.GeminiStep{Calls: []fakemodel.GeminiCall{{Name: "run_shell_command", Args: map[string]any{
			"command": command, "description": "git"}}}},
		fakemodel.GeminiStep{Text: geminiFinal},
	)
	m.cur.Store(f)
	return f
}

const geminiCommit = "git add " + geminiFile + " && git commit -q -m '" + geminiMsg + "'"

var geminiArgs = []string{"gemini", "--yolo", "-p", "Write " + geminiFile + " and commit it."}

func testRealGemini(e *env) {
	t := e.t
	start := time.Now()
	npmProxy := npmRegistryProxy(e, "@google/gemini-cli")
	nodeImage := pushNodeImage(e, "gemini")

	models := &geminiModels{}
	models.next("/workspace", geminiCommit)
	ln, err := net.Listen("tcp", net.JoinHostPort(e.bridgeGW, "0"))
	if err != nil {
		t.Fatalf("listening on the host's address on Docker's default bridge: %v", err)
	}
	srv := &http.Server{Handler: models}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	p := e.newProject("realgemini", "gemini")
	yaml := fmt.Sprintf(`# agentbox end-to-end test project: the real Gemini CLI
version: 1
name: %s
agent: gemini
image:
  base: %s
egress:
  image: %s
network:
  cidrs:
    - cidr: %s/32
      ports: [%d]
env:
  GOOGLE_GEMINI_BASE_URL: http://%s:%d
secrets: [GEMINI_API_KEY]
resources:
  memory: 2g
devcontainer:
  ide: none
`, p.name, nodeImage, e.baseTag, e.bridgeGW, port, e.bridgeGW, port)
	if err := os.WriteFile(filepath.Join(p.dir, "agentbox.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	e.must(runOpt{dir: p.dir}, "git", "-c", "user.name=agentbox e2e", "-c", "user.email=e2e@agentbox.invalid", "commit", "-q", "-a", "-m", "gemini")
	r := p.mustAgentbox(nil, "bump")
	e.timed("gemini: agentbox bump (the real npm registry)", r.took)
	npm := e.settings(standIns{npm: npmProxy})
	r = p.compose("", nil, npm, "build")
	e.trackImages(p.name)
	if r.failed() {
		t.Fatalf("docker compose build: %s", r)
	}
	e.timed("gemini: build the images (npm ci of the real CLI)", r.took)
	e.timed("gemini: setup (node image, bump, build)", time.Since(start))

	env := append([]string{"XDG_STATE_HOME=" + filepath.Join(e.work, "state-gemini"), "GEMINI_API_KEY=" + geminiKey}, npm...)
	defer p.agentbox(env, "gc")
	geminiShell(e, p, models, env)
	geminiRun(e, p, models, env)
	geminiDirect(e, p, models, env)
}

// geminiShell: up with the fake DNS (every name the CLI asks for is
// answered on the test's network), shell, fetch; the names it asked for.
func geminiShell(e *env, p *project, models *geminiModels, env []string) {
	t := e.t
	fake := models.next("/workspace", geminiCommit)
	p.mustAgentbox(env, "up")
	upWithFakeDNS(e, p, env)
	r := p.agentbox(env, append([]string{"shell", "--"}, withKeySearch(geminiArgs, geminiKey)...)...)
	e.timed("gemini: agentbox shell -- gemini (fake model), then the key search", r.took)
	geminiTurns(e, fake, r)
	checkKeySearch(e, "gemini in the sandbox (shell)", r, false)
	if r = p.agentbox(env, "fetch"); r.failed() {
		t.Fatalf("agentbox fetch: %s", r)
	}
	geminiCommitArrived(e, p, "refs/heads/agentbox/main")
	names := askedNames(e.logsOf(e.container(p.name, "egress")))
	r = p.agentbox(env, "blocked", "--json")
	t.Logf("gemini (up + shell) asked the resolver for %q; agentbox blocked: %s", names, r.stdout)
	p.mustAgentbox(env, "down")
	if len(names) > 0 {
		t.Errorf("gemini asked the resolver for %q beyond its model endpoint (an address)", names)
	}
}

// geminiRun: agentbox run, the clone workspace: the commit arrives as the
// task's branch, and nothing was refused.
func geminiRun(e *env, p *project, models *geminiModels, env []string) {
	t := e.t
	fake := models.next("/workspace", geminiCommit)
	r := p.agentbox(env, append([]string{"run", "--name", "gemini", "--json", "--"}, withKeySearch(geminiArgs, geminiKey)...)...)
	e.timed("gemini: agentbox run -- gemini, run to branch, then the key search", r.took)
	var sum runSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("agentbox run -- gemini: exit %d, summary %q (%v)\n%s", r.code, r.stdout, err, tail(r.stderr, 80))
	}
	geminiTurns(e, fake, r)
	ms := checkKeySearch(e, "gemini's task", r, true)
	e.timed("  of which the key search", time.Duration(ms)*time.Millisecond)
	if len(sum.Commits) != 1 || sum.BranchStatus != "new" {
		t.Errorf("the summary of task gemini: %+v", sum)
	}
	geminiCommitArrived(e, p, "refs/heads/agentbox/gemini")
	t.Logf("task gemini refused names %v, addresses %+v", sum.RefusedNames, sum.RefusedAddresses)
	if len(sum.RefusedNames) > 0 || len(sum.RefusedAddresses) > 0 {
		t.Errorf("gemini was refused something: names %v, addresses %+v", sum.RefusedNames, sum.RefusedAddresses)
	}
	p.agentbox(env, "rm", "gemini")
}

// geminiDirect: agentbox run --workspace direct. The project's .git is
// read-only there: the agent writes the file and runs git status, which
// works for Gemini CLI's shell (it skips git's system configuration, where
// the image trusts the workspace; the image's environment trusts it too).
func geminiDirect(e *env, p *project, models *geminiModels, env []string) {
	t := e.t
	fake := models.next("/workspace", "git status --short")
	e.must(runOpt{}, "chown", "-R", "1000:1000", p.dir)
	defer e.must(runOpt{}, "chown", "-R", "0:0", p.dir)
	env = append(slices.Clone(env), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
	file := filepath.Join(p.dir, geminiFile)
	defer os.Remove(file)
	r := p.agentbox(env, append([]string{"run", "--workspace", "direct", "--name", "gemini-direct", "--json", "--"}, geminiArgs...)...)
	e.timed("gemini: agentbox run --workspace direct -- gemini", r.took)
	if r.failed() {
		t.Fatalf("agentbox run --workspace direct -- gemini: %s", r)
	}
	geminiTurns(e, fake, r)
	if data, err := os.ReadFile(file); err != nil || string(data) != "written by gemini\n" {
		t.Errorf("gemini's file in the project: %q %v", data, err)
	}
	reqs := fake.Requests()
	if last := reqs[len(reqs)-1]; len(last.FunctionResponses) < 2 || !strings.Contains(string(last.FunctionResponses[1].Response), "?? "+geminiFile) {
		t.Errorf("git status in gemini's shell, in the direct workspace: %+v", last.FunctionResponses)
	}
	p.agentbox(env, "rm", "gemini-direct")
}

// geminiTurns: the CLI went through the fake's script, with the user's key
// on every request.
func geminiTurns(e *env, fake *fakemodel.Gemini, r result) {
	t := e.t
	var steps []string
	last := -1
	for _, q := range fake.Requests() {
		steps = append(steps, fmt.Sprintf("%s %s step %d", q.Method, q.Path, q.Step))
		last = max(last, q.Step)
		if q.Key != geminiKey {
			t.Errorf("%s %s reached the model with key %q, want the user's", q.Method, q.Path, q.Key)
		}
	}
	t.Logf("the model received: %q", steps)
	if last != 2 {
		t.Fatalf("gemini did not complete the fake's script (last step %d): %s", last, r)
	}
}

// geminiCommitArrived: the branch on the host holds the agent's commit.
func geminiCommitArrived(e *env, p *project, ref string) {
	out := e.must(runOpt{dir: p.dir}, "git", "log", "-1", "--format=%s|%an <%ae>", ref).stdout
	if want := geminiMsg + "|" + geminiAuthor; strings.TrimSpace(out) != want {
		e.t.Errorf("%s: last commit %q, want %q", ref, strings.TrimSpace(out), want)
	}
	if got := e.must(runOpt{dir: p.dir}, "git", "show", ref+":"+geminiFile).stdout; got != "written by gemini\n" {
		e.t.Errorf("%s:%s is %q", ref, geminiFile, got)
	}
}
