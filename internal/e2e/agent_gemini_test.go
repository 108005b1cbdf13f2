//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/internal/fakemodel"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// The real Gemini CLI in the sandbox (issue 20): agentbox bump resolves its
// npm tree from the npm registry, the agent image installs it with npm ci,
// and a task of agentbox run runs it against the fake Gemini API, served on
// the fake internet's gateway (the host's address on the test's own
// network). agentbox.yaml allows that address and port alone, names it in
// GOOGLE_GEMINI_BASE_URL (env:) and passes GEMINI_API_KEY to tasks
// (run.env); the image's generated settings do the rest.
const (
	geminiKey    = "agentbox-e2e-gemini-key-0123456789"
	geminiFile   = "GEMINI-FAKE.txt"
	geminiMsg    = "gemini: add " + geminiFile
	geminiFinal  = "Committed " + geminiFile + "."
	geminiAuthor = "Gemini CLI (agentbox) <gemini@agentbox.invalid>"
)

func testRealGemini(e *env) {
	t := e.t
	start := time.Now()
	npmProxy := geminiRegistryProxy(e)
	r := e.must(runOpt{dir: e.root}, "bash", "scripts/e2e/node-image.sh", e.registry)
	m := digestRef.FindStringSubmatch(strings.TrimSpace(r.stdout))
	if m == nil {
		t.Fatalf("scripts/e2e/node-image.sh printed %q, want REF@sha256:...", r.stdout)
	}
	t.Cleanup(func() { quiet(t, "docker", "image", "rm", m[1]) }) // the tag only

	fake := fakemodel.NewGemini(
		fakemodel.GeminiStep{Calls: []fakemodel.GeminiCall{{Name: "write_file", Args: map[string]any{
			"file_path": "/workspace/" + geminiFile, "content": "written by gemini\n"}}}},
		fakemodel.GeminiStep{Calls: []fakemodel.GeminiCall{{Name: "run_shell_command", Args: map[string]any{
			"command": "git add " + geminiFile + " && git commit -q -m '" + geminiMsg + "'", "description": "commit"}}}},
		fakemodel.GeminiStep{Text: geminiFinal},
	)
	ln, err := net.Listen("tcp", net.JoinHostPort(fakeGateway, "0"))
	if err != nil {
		t.Fatalf("listening on the fake internet's gateway: %v", err)
	}
	srv := &http.Server{Handler: fake}
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
run:
  env: [GEMINI_API_KEY]
resources:
  memory: 2g
devcontainer:
  ide: none
`, p.name, m[1], e.baseTag, fakeGateway, port, fakeGateway, port)
	if err := os.WriteFile(filepath.Join(p.dir, "agentbox.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	e.must(runOpt{dir: p.dir}, "git", "-c", "user.name=agentbox e2e", "-c", "user.email=e2e@agentbox.invalid", "commit", "-q", "-a", "-m", "gemini")
	r = p.mustAgentbox(nil, "bump")
	e.timed("gemini: agentbox bump (the real npm registry)", r.took)
	npm := []string{"NPM_CONFIG_REGISTRY=" + npmProxy}
	r = p.compose("", nil, npm, "build")
	e.trackImages(p.name)
	if r.failed() {
		t.Fatalf("docker compose build: %s", r)
	}
	e.timed("gemini: build the images (npm ci of the real CLI)", r.took)
	e.timed("gemini: setup (node image, bump, build)", time.Since(start))

	env := append([]string{"XDG_STATE_HOME=" + filepath.Join(e.work, "state-gemini"), "GEMINI_API_KEY=" + geminiKey}, npm...)
	defer p.agentbox(env, "gc")
	r = p.agentbox(env, "run", "--name", "gemini", "--json", "--", "gemini", "--yolo", "-p", "Write "+geminiFile+" and commit it.")
	e.timed("gemini: agentbox run -- gemini, run to branch", r.took)
	var sum runSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("agentbox run -- gemini: exit %d, summary %q (%v)\n%s", r.code, r.stdout, err, tail(r.stderr, 80))
	}
	var steps []string
	for _, q := range fake.Requests() {
		steps = append(steps, fmt.Sprintf("%s %s step %d", q.Method, q.Path, q.Step))
		if q.Key != geminiKey {
			t.Errorf("%s %s reached the model with key %q, want the user's", q.Method, q.Path, q.Key)
		}
	}
	t.Logf("the model received: %q", steps)
	if len(steps) == 0 || len(sum.Commits) != 1 || sum.BranchStatus != "new" {
		t.Errorf("gemini did not complete the fake's script: summary %+v\n%s", sum, r)
	}
	ref := "refs/heads/agentbox/gemini"
	out := e.must(runOpt{dir: p.dir}, "git", "log", "-1", "--format=%s|%an <%ae>", ref).stdout
	if want := geminiMsg + "|" + geminiAuthor; strings.TrimSpace(out) != want {
		t.Errorf("%s: last commit %q, want %q", ref, strings.TrimSpace(out), want)
	}
	t.Logf("task gemini refused names %v, addresses %+v", sum.RefusedNames, sum.RefusedAddresses)
	if len(sum.RefusedNames) > 0 || len(sum.RefusedAddresses) > 0 {
		t.Errorf("gemini was refused something: names %v, addresses %+v", sum.RefusedNames, sum.RefusedAddresses)
	}
	p.agentbox(env, "rm", "gemini")
}

// geminiRegistryProxy serves npm's configured registry on the bridge, in
// plain HTTP, for the image build: a build container reaches the host there
// and trusts no certificate authority but its image's. It skips (or under
// CI=true fails) when the registry does not answer.
func geminiRegistryProxy(e *env) string {
	t := e.t
	out, err := exec.Command("npm", "config", "get", "registry").Output()
	target, perr := url.Parse(strings.TrimSpace(string(out)))
	if err != nil || perr != nil || target.Host == "" {
		t.Fatalf("npm config get registry: %v %v", err, perr)
	}
	res, err := http.Get(target.JoinPath("@google%2fgemini-cli").String())
	if err != nil || res.StatusCode != http.StatusOK {
		why := fmt.Sprint(err)
		if res != nil {
			why = res.Status
			res.Body.Close()
		}
		testenv.Unavailable(t, "the npm registry does not answer ("+why+")")
	}
	res.Body.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort(e.bridgeGW, "0"))
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	director := rp.Director
	rp.Director = func(r *http.Request) {
		director(r)
		r.Host = target.Host
	}
	srv := &http.Server{Handler: rp}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}
