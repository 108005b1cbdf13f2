package fakemodel

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// TestOpenCodeCLI runs the real OpenCode CLI headless against the fake
// Responses API in a network namespace of the test's own, and checks the
// commit, the key and the names it looked up. OpenCode's openai provider
// takes its base URL from OPENAI_BASE_URL, as agentbox passes env: from
// agentbox.yaml: it needs no generated configuration. The catalog's
// environment (no update check, no models.dev fetch, no default plugins or
// LSP downloads) keeps it from its own hosts.
func TestOpenCodeCLI(t *testing.T) {
	testenv.RequireRoot(t)
	for _, p := range []string{"ip", "unshare", "setpriv"} {
		testenv.RequireProgram(t, p)
	}
	opencode := npmCLI(t, "opencode-ai", "opencode")
	lab := netlab.New(t, "")
	ns := lab.Namespace("opencode")
	fake := NewOpenAI(codexScript, "Committed CODEX.md.")
	var ln net.Listener
	var dns net.PacketConn
	codexInNamespace(t, ns, func() (err error) {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
		dns, err = net.ListenPacket("udp", "127.0.0.1:53")
		return err
	})
	srv := httptest.NewUnstartedServer(fake)
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	asked := codexRecordDNS(dns)
	defer dns.Close()

	repo := filepath.Join(lab.Dir(), "repo")
	home := filepath.Join(lab.Dir(), "home")
	for _, d := range []string{repo, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "start"}} {
		if out, err := codexGit(repo, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	const key = "sk-agentbox-test-key"
	env := append(codexGitEnv(), "HOME="+home, "OPENAI_API_KEY="+key, "OPENAI_BASE_URL="+srv.URL+"/v1", "PATH="+os.Getenv("PATH"))
	agent, _ := catalog.LookupAgent("opencode")
	for _, v := range agent.Env {
		env = append(env, v.Name+"="+v.Value)
	}
	argv := append(append([]string{"env", "-i"}, env...), opencode, "run", "-m", "openai/gpt-5", "--dir", repo, "add a file and commit it")
	proc, err := lab.Start(ns, netlab.Spec{
		Files: map[string]netlab.File{"/etc/resolv.conf": {Data: []byte("nameserver 127.0.0.1\n"), Mode: 0o644}},
		Argv:  argv,
	})
	if err != nil {
		t.Fatal(err)
	}
	code, err := proc.Wait(2 * time.Minute)
	t.Logf("opencode run: exit %d %v\n%s", code, err, proc.Output())
	for i, r := range fake.OpenAIRequests() {
		t.Logf("request %d: %s %s tool=%q output=%q", i, r.Method, r.Path, r.Tool, r.Output)
	}
	t.Logf("names asked: %q", asked())
	if err != nil || code != 0 {
		t.Fatalf("opencode run failed: exit %d %v", code, err)
	}
	log, err := codexGit(repo, "log", "-1", "--format=%s", "--name-only").CombinedOutput()
	if err != nil || !strings.Contains(string(log), "codex: add CODEX.md\n\nCODEX.md") {
		t.Fatalf("the commit the model asked for is not in the repository: %v: %s", err, log)
	}
	calls := 0
	for _, r := range fake.OpenAIRequests() {
		if r.Authorization != "Bearer "+key {
			t.Errorf("%s %s: Authorization %q, want the user's key", r.Method, r.Path, r.Authorization)
		}
		if r.Tool != "" {
			calls++
		}
	}
	if calls == 0 {
		t.Errorf("the fake called no tool")
	}
	// What it still asks for is refused in the sandbox (no catalog entry
	// has it), and OpenCode goes on without it.
	for _, n := range asked() {
		for _, d := range agent.Domains {
			if n == strings.TrimPrefix(d, "*.") || strings.HasSuffix(n, "."+strings.TrimPrefix(d, "*.")) {
				t.Errorf("opencode looked up %s, a name its catalog entry allows (%s)", n, d)
			}
		}
	}
}

// npmCLI returns program bin of the newest npm package pkg, installed with
// npm into codexCache on first use. It skips (fails under CI=true) when
// npm or its registry cannot be reached.
func npmCLI(t *testing.T, pkg, bin string) string {
	t.Helper()
	npm := testenv.RequireProgram(t, "npm")
	testenv.RequireProgram(t, "git")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "view", pkg, "version").Output()
	version := strings.TrimSpace(string(out))
	if err != nil || version == "" {
		testenv.Unavailable(t, "the npm registry does not answer for "+pkg+" ("+codexErr(err)+")")
	}
	dir := filepath.Join(codexCache, strings.ReplaceAll(strings.TrimPrefix(pkg, "@"), "/", "-")+"@"+version)
	path := filepath.Join(dir, "node_modules", ".bin", bin)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(codexCache, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(codexCache, ".install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	install := exec.CommandContext(ctx, npm, "install", "--no-fund", "--no-audit", "--no-save", "--prefix", tmp, pkg+"@"+version)
	if out, err := install.CombinedOutput(); err != nil {
		testenv.Unavailable(t, "npm install "+pkg+"@"+version+" failed ("+codexErr(err)+"): "+string(out))
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
	return path
}
