//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/internal/fakemodel"
)

// The real Copilot CLI in the sandbox (issue 20): agentbox bump resolves its
// npm tree from the npm registry, the image installs it with npm ci, and a
// task of agentbox run runs it against the fake Chat Completions API as its
// custom provider (BYOK: COPILOT_PROVIDER_BASE_URL and COPILOT_MODEL in
// env:, COPILOT_PROVIDER_API_KEY passed to tasks by run.env), served on the
// fake internet's gateway, which agentbox.yaml allows by address and port.
const (
	copilotKey    = "agentbox-e2e-copilot-key-0123456789"
	copilotFile   = "COPILOT-FAKE.txt"
	copilotMsg    = "copilot: add " + copilotFile
	copilotAuthor = "Copilot CLI (agentbox) <copilot@agentbox.invalid>"
)

func testRealCopilot(e *env) {
	t := e.t
	start := time.Now()
	npmProxy := geminiRegistryProxy(e)
	r := e.must(runOpt{dir: e.root}, "bash", "scripts/e2e/node-image.sh", e.registry)
	m := digestRef.FindStringSubmatch(strings.TrimSpace(r.stdout))
	if m == nil {
		t.Fatalf("scripts/e2e/node-image.sh printed %q, want REF@sha256:...", r.stdout)
	}
	t.Cleanup(func() { quiet(t, "docker", "image", "rm", m[1]) }) // the tag only

	fake := fakemodel.NewChat(
		fakemodel.ChatStep{Calls: []fakemodel.ChatCall{{Name: "create", Args: map[string]any{
			"path": "/workspace/" + copilotFile, "file_text": "written by copilot\n"}}}},
		fakemodel.ChatStep{Calls: []fakemodel.ChatCall{{Name: "bash", Args: map[string]any{
			"command": "git add " + copilotFile + " && git commit -q -m '" + copilotMsg + "'", "description": "commit"}}}},
		fakemodel.ChatStep{Text: "Committed " + copilotFile + "."},
	)
	ln, err := net.Listen("tcp", net.JoinHostPort(fakeGateway, "0"))
	if err != nil {
		t.Fatalf("listening on the fake internet's gateway: %v", err)
	}
	srv := &http.Server{Handler: fake}
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
run:
  env: [COPILOT_PROVIDER_API_KEY]
resources:
  memory: 2g
devcontainer:
  ide: none
`, p.name, m[1], e.baseTag, fakeGateway, port, fakeGateway, port)
	if err := os.WriteFile(filepath.Join(p.dir, "agentbox.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	e.must(runOpt{dir: p.dir}, "git", "-c", "user.name=agentbox e2e", "-c", "user.email=e2e@agentbox.invalid", "commit", "-q", "-a", "-m", "copilot")
	r = p.mustAgentbox(nil, "bump")
	e.timed("copilot: agentbox bump (the real npm registry)", r.took)
	npm := []string{"NPM_CONFIG_REGISTRY=" + npmProxy}
	r = p.compose("", nil, npm, "build")
	e.trackImages(p.name)
	if r.failed() {
		t.Fatalf("docker compose build: %s", r)
	}
	e.timed("copilot: setup (node image, bump, build with npm ci of the real CLI)", time.Since(start))

	env := append([]string{"XDG_STATE_HOME=" + filepath.Join(e.work, "state-copilot"), "COPILOT_PROVIDER_API_KEY=" + copilotKey}, npm...)
	defer p.agentbox(env, "gc")
	r = p.agentbox(env, "run", "--name", "copilot", "--json", "--", "copilot", "-p", "Write "+copilotFile+" and commit it.", "--allow-all-tools")
	e.timed("copilot: agentbox run -- copilot, run to branch", r.took)
	var sum runSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("agentbox run -- copilot: exit %d, summary %q (%v)\n%s", r.code, r.stdout, err, tail(r.stderr, 80))
	}
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
	ref := "refs/heads/agentbox/copilot"
	out := e.must(runOpt{dir: p.dir}, "git", "log", "-1", "--format=%s|%an <%ae>", ref).stdout
	if want := copilotMsg + "|" + copilotAuthor; strings.TrimSpace(out) != want {
		t.Errorf("%s: last commit %q, want %q", ref, strings.TrimSpace(out), want)
	}
	if got := e.must(runOpt{dir: p.dir}, "git", "show", ref+":"+copilotFile).stdout; got != "written by copilot\n" {
		t.Errorf("%s:%s is %q", ref, copilotFile, got)
	}
	// What else it tried: with a provider of its own, Copilot CLI needs no
	// GitHub name; the catalog's domains are allowed, so a refusal is of a
	// name the catalog lacks.
	t.Logf("task copilot refused names %v, addresses %+v", sum.RefusedNames, sum.RefusedAddresses)
	if len(sum.RefusedNames) > 0 || len(sum.RefusedAddresses) > 0 {
		t.Errorf("copilot was refused something: names %v, addresses %+v", sum.RefusedNames, sum.RefusedAddresses)
	}
	p.agentbox(env, "rm", "copilot")
}
