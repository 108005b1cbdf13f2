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

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/internal/fakemodel"
)

// The real Copilot CLI in the sandbox (issue 20): agentbox bump resolves its
// npm tree from the npm registry, the image installs it with npm ci, and a
// task of agentbox run runs it against the fake Chat Completions API as its
// custom provider (BYOK: COPILOT_PROVIDER_BASE_URL and COPILOT_MODEL in
// env:, COPILOT_PROVIDER_API_KEY passed by secrets, held by the gateway),
// served on the host's address on Docker's default bridge (private, as the
// gateway wants for plain HTTP), which agentbox.yaml allows by address and
// port:
// up + shell + fetch, run (clone) and run --workspace direct.
const (
	copilotKey    = "agentbox-e2e-copilot-key-0123456789"
	copilotFile   = "COPILOT-FAKE.txt"
	copilotMsg    = "copilot: add " + copilotFile
	copilotAuthor = "Copilot CLI (agentbox) <copilot@agentbox.invalid>"
)

// copilotModels serves the fake of the part that runs; each part installs
// a fresh one, so that its records are its own.
type copilotModels struct {
	cur atomic.Pointer[fakemodel.Chat]
}

func (m *copilotModels) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.cur.Load().ServeHTTP(w, r)
}

// next installs a fake whose model has the CLI create copilotFile in
// /workspace and then run command.
func (m *copilotModels) next(command string) *fakemodel.Chat {
	f := fakemodel.NewChat(
		fakemodel.ChatStep{Calls: []fakemodel.ChatCall{{Name: "create", Args: map[string]any{
			"path": "/workspace/" + copilotFile, "file_text": "written by copilot\n"}}}},
		fakemodel.ChatStep{Calls: []fakemodel.ChatCall{{Name: "bash", Args: map[string]any{
			"command": command, "description": "git"}}}},
		fakemodel.ChatStep{Text: "Committed " + copilotFile + "."},
	)
	m.cur.Store(f)
	return f
}

const copilotCommit = "git add " + copilotFile + " && git commit -q -m '" + copilotMsg + "'"

var copilotArgs = []string{"copilot", "-p", "Write " + copilotFile + " and commit it.", "--allow-all-tools"}

func testRealCopilot(e *env) {
	t := e.t
	start := time.Now()
	npmProxy := npmRegistryProxy(e, "@github/copilot")
	nodeImage := pushNodeImage(e, "copilot")

	models := &copilotModels{}
	models.next(copilotCommit)
	ln, err := net.Listen("tcp", net.JoinHostPort(e.bridgeGW, "0"))
	if err != nil {
		t.Fatalf("listening on the host's address on Docker's default bridge: %v", err)
	}
	srv := &http.Server{Handler: models}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	p := e.newProject("realcopilot", "copilot")
	yaml := fmt.Sprintf(`# agentbox end-to-end test project: the real Copilot CLI
version: 1
name: %s
agent: copilot
image:
  base: %s
egress:
  image: %s
network:
  cidrs:
    - cidr: %s/32
      ports: [%d]
env:
  COPILOT_PROVIDER_BASE_URL: http://%s:%d/v1
  COPILOT_MODEL: gpt-4.1
secrets: [COPILOT_PROVIDER_API_KEY]
resources:
  memory: 2g
devcontainer:
  ide: none
`, p.name, nodeImage, e.baseTag, e.bridgeGW, port, e.bridgeGW, port)
	if err := os.WriteFile(filepath.Join(p.dir, "agentbox.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	e.must(runOpt{dir: p.dir}, "git", "-c", "user.name=agentbox e2e", "-c", "user.email=e2e@agentbox.invalid", "commit", "-q", "-a", "-m", "copilot")
	r := p.mustAgentbox(nil, "bump")
	e.timed("copilot: agentbox bump (the real npm registry)", r.took)
	npm := e.settings(standIns{npm: npmProxy})
	r = p.compose("", nil, npm, "build")
	e.trackImages(p.name)
	if r.failed() {
		t.Fatalf("docker compose build: %s", r)
	}
	e.timed("copilot: setup (node image, bump, build with npm ci of the real CLI)", time.Since(start))

	env := append([]string{"XDG_STATE_HOME=" + filepath.Join(e.work, "state-copilot"), "COPILOT_PROVIDER_API_KEY=" + copilotKey}, npm...)
	defer p.agentbox(env, "gc")
	copilotShell(e, p, models, env)
	copilotRun(e, p, models, env)
	copilotDirect(e, p, models, env)
}

// copilotShell: up with the fake DNS (every name the CLI asks for is
// answered on the test's network), shell, fetch; the names it asked for.
func copilotShell(e *env, p *project, models *copilotModels, env []string) {
	t := e.t
	fake := models.next(copilotCommit)
	p.mustAgentbox(env, "up")
	upWithFakeDNS(e, p, env)
	r := p.agentbox(env, append([]string{"shell", "--"}, copilotArgs...)...)
	e.timed("copilot: agentbox shell -- copilot (fake model)", r.took)
	copilotTurns(e, fake, r)
	if r = p.agentbox(env, "fetch"); r.failed() {
		t.Fatalf("agentbox fetch: %s", r)
	}
	copilotCommitArrived(e, p, "refs/heads/agentbox/main")
	names := askedNames(e.logsOf(e.container(p.name, "egress")))
	t.Logf("copilot (up + shell) asked the resolver for %q", names)
	p.mustAgentbox(env, "down")
	// Measured with Copilot CLI 1.0.102: with a provider of its own it
	// still asks for api.github.com, which its catalog entry allows (the
	// GitHub login needs it). Nothing beyond the catalog.
	agent, _ := catalog.LookupAgent("copilot")
	for _, n := range names {
		if !slices.ContainsFunc(agent.Domains, func(d string) bool {
			return n == strings.TrimPrefix(d, "*.") || strings.HasPrefix(d, "*.") && strings.HasSuffix(n, d[1:])
		}) {
			t.Errorf("copilot asked the resolver for %s, which its catalog entry does not allow", n)
		}
	}
}

// copilotRun: agentbox run, the clone workspace: the commit arrives as the
// task's branch, and nothing was refused.
func copilotRun(e *env, p *project, models *copilotModels, env []string) {
	t := e.t
	fake := models.next(copilotCommit)
	r := p.agentbox(env, append([]string{"run", "--name", "copilot", "--json", "--"}, copilotArgs...)...)
	e.timed("copilot: agentbox run -- copilot, run to branch", r.took)
	var sum runSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("agentbox run -- copilot: exit %d, summary %q (%v)\n%s", r.code, r.stdout, err, tail(r.stderr, 80))
	}
	copilotTurns(e, fake, r)
	copilotCommitArrived(e, p, "refs/heads/agentbox/copilot")
	t.Logf("task copilot refused names %v, addresses %+v", sum.RefusedNames, sum.RefusedAddresses)
	if len(sum.RefusedNames) > 0 || len(sum.RefusedAddresses) > 0 {
		t.Errorf("copilot was refused something: names %v, addresses %+v", sum.RefusedNames, sum.RefusedAddresses)
	}
	p.agentbox(env, "rm", "copilot")
}

// copilotDirect: agentbox run --workspace direct. The project's .git is
// read-only there: the agent creates the file and runs git status.
func copilotDirect(e *env, p *project, models *copilotModels, env []string) {
	t := e.t
	fake := models.next("git status --short")
	e.must(runOpt{}, "chown", "-R", "1000:1000", p.dir)
	defer e.must(runOpt{}, "chown", "-R", "0:0", p.dir)
	env = append(slices.Clone(env), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
	file := filepath.Join(p.dir, copilotFile)
	defer os.Remove(file)
	r := p.agentbox(env, append([]string{"run", "--workspace", "direct", "--name", "copilot-direct", "--json", "--"}, copilotArgs...)...)
	e.timed("copilot: agentbox run --workspace direct -- copilot", r.took)
	if r.failed() {
		t.Fatalf("agentbox run --workspace direct -- copilot: %s", r)
	}
	copilotTurns(e, fake, r)
	if data, err := os.ReadFile(file); err != nil || string(data) != "written by copilot\n" {
		t.Errorf("copilot's file in the project: %q %v", data, err)
	}
	p.agentbox(env, "rm", "copilot-direct")
}

// copilotTurns: the CLI went through the fake's script, with the user's
// key on every request.
func copilotTurns(e *env, fake *fakemodel.Chat, r result) {
	t := e.t
	last := -1
	for _, q := range fake.Requests() {
		t.Logf("the model received %s %s step %d", q.Method, q.Path, q.Step)
		last = max(last, q.Step)
		if q.Authorization != "Bearer "+copilotKey {
			t.Errorf("%s %s reached the model with Authorization %q, want the user's key", q.Method, q.Path, q.Authorization)
		}
	}
	if last != 2 {
		t.Fatalf("copilot did not complete the fake's script (last step %d): %s", last, r)
	}
}

// copilotCommitArrived: the branch on the host holds the agent's commit.
func copilotCommitArrived(e *env, p *project, ref string) {
	out := e.must(runOpt{dir: p.dir}, "git", "log", "-1", "--format=%s|%an <%ae>", ref).stdout
	if want := copilotMsg + "|" + copilotAuthor; strings.TrimSpace(out) != want {
		e.t.Errorf("%s: last commit %q, want %q", ref, strings.TrimSpace(out), want)
	}
	if got := e.must(runOpt{dir: p.dir}, "git", "show", ref+":"+copilotFile).stdout; got != "written by copilot\n" {
		e.t.Errorf("%s:%s is %q", ref, copilotFile, got)
	}
}
