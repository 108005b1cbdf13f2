package fakemodel

import (
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// TestOpenCodeAsksForAGrant: the real OpenCode, with the configuration
// agentbox generates (OPENCODE_CONFIG, which registers the MCP server),
// calls agentbox's request_network_access when the fake model asks, with
// no prompt, and the request reaches the endpoint (in OpenCode's own
// network namespace).
func TestOpenCodeAsksForAGrant(t *testing.T) {
	testenv.RequireRoot(t)
	for _, p := range []string{"ip", "unshare", "setpriv", "perl", "node"} {
		testenv.RequireProgram(t, p)
	}
	opencode := npmCLI(t, "opencode-ai", "opencode")
	lab := netlab.New(t, "")
	ns := lab.Namespace("opencode")
	fake := NewOpenAI("", "Asked.")
	fake.Tool = "request_network_access" // OpenCode names it agentbox_request_network_access
	fake.Args = map[string]any{"destination": "docs.example.com", "reason": "read the API docs", "duration": "15m"}
	var ln net.Listener
	codexInNamespace(t, ns, func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	srv := httptest.NewUnstartedServer(fake)
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	dir := filepath.Join(lab.Dir(), "mcp")
	home := filepath.Join(lab.Dir(), "home")
	repo := filepath.Join(lab.Dir(), "repo")
	spool, answers := filepath.Join(dir, "spool"), filepath.Join(dir, "answers")
	for _, d := range []string{dir, home, repo, answers} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(lab.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "testdata", strings.TrimPrefix(generator.RequestMCPFile, generator.OutDir+"/")))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "request-mcp.js"), script)
	agent, _ := catalog.LookupAgent("opencode")
	files, err := generator.AgentFiles(agent, agent.Env, config.DefaultWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(files[catalog.OpenCodeConfig])
	if !strings.Contains(conf, generator.RequestMCPScript) {
		t.Fatalf("agentbox's %s does not register the MCP server:\n%s", catalog.OpenCodeConfig, conf)
	}
	writeFile(t, filepath.Join(dir, "opencode.json"), []byte(strings.Replace(conf, generator.RequestMCPScript, filepath.Join(dir, "request-mcp.js"), 1)))
	prog, err := firewall.RequestsProgram()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lab.Start(ns, netlab.Spec{Argv: append([]string{"perl"}, endpointArgs(t, prog, spool, answers)...)}); err != nil {
		t.Fatal(err)
	}
	env := append(codexGitEnv(), "HOME="+home, "OPENAI_API_KEY=sk-agentbox-test-key", "OPENAI_BASE_URL="+srv.URL+"/v1", "PATH="+os.Getenv("PATH"))
	for _, v := range agent.Env {
		if v.Name == "OPENCODE_CONFIG" {
			v.Value = filepath.Join(dir, "opencode.json")
		}
		env = append(env, v.Name+"="+v.Value)
	}
	argv := append(append([]string{"env", "-i"}, env...), opencode, "run", "-m", "openai/gpt-5", "--dir", repo, "I need the API docs at docs.example.com.")
	proc, err := lab.Start(ns, netlab.Spec{Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	code, err := proc.Wait(2 * time.Minute)
	t.Logf("opencode run: exit %d %v\n%s", code, err, proc.Output())
	var outputs []string
	for i, r := range fake.OpenAIRequests() {
		t.Logf("request %d: %s %s tool=%q output=%q", i, r.Method, r.Path, r.Tool, r.Output)
		outputs = append(outputs, r.Output)
	}
	joined := strings.Join(outputs, "\n")
	m := regexp.MustCompile(`id: (r[0-9a-f]{12})`).FindStringSubmatch(joined)
	if m == nil || !strings.Contains(joined, "state: pending") {
		t.Fatalf("the tool's output that reached the model: %q", joined)
	}
	if _, err := os.Stat(filepath.Join(spool, m[1]+".req")); err != nil {
		t.Errorf("the request is not spooled: %v", err)
	}
}
