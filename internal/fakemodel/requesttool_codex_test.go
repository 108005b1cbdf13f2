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

// TestCodexAsksForAGrant: the real Codex, with the config.toml agentbox
// generates (which registers the MCP server), calls agentbox's
// request_network_access when the fake model asks, and the request
// reaches the endpoint (in Codex's own network namespace).
func TestCodexAsksForAGrant(t *testing.T) {
	testenv.RequireRoot(t)
	for _, p := range []string{"ip", "unshare", "setpriv", "perl", "node"} {
		testenv.RequireProgram(t, p)
	}
	codex := codexInstall(t)
	lab := netlab.New(t, "")
	ns := lab.Namespace("codex")
	fake := NewOpenAI("", "Asked.")
	fake.Tool = "mcp__agentbox__request_network_access" // Codex's name of the MCP server's tool
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
	home := filepath.Join(lab.Dir(), "codex-home")
	spool, answers := filepath.Join(dir, "spool"), filepath.Join(dir, "answers")
	for _, d := range []string{dir, home, answers} {
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
	agent, _ := catalog.LookupAgent("codex")
	files, err := generator.AgentFiles(agent, []catalog.EnvVar{{Name: "OPENAI_BASE_URL", Value: srv.URL + "/v1"}}, config.DefaultWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(files[catalog.CodexSystemConfig])
	if !strings.Contains(conf, generator.RequestMCPScript) {
		t.Fatalf("agentbox's %s does not register the MCP server:\n%s", catalog.CodexSystemConfig, conf)
	}
	conf = strings.Replace(conf, generator.RequestMCPScript, filepath.Join(dir, "request-mcp.js"), 1)
	prog, err := firewall.RequestsProgram()
	if err != nil {
		t.Fatal(err)
	}
	endpoint, err := lab.Start(ns, netlab.Spec{Argv: append([]string{"perl"}, endpointArgs(t, prog, spool, answers)...)})
	if err != nil {
		t.Fatal(err)
	}
	_ = endpoint
	const key = "sk-agentbox-test-key"
	env := append(codexGitEnv(), "CODEX_HOME="+home, "HOME="+home, "OPENAI_API_KEY="+key, "PATH="+os.Getenv("PATH"))
	argv := append(append([]string{"env", "-i"}, env...), codex, "exec", "--strict-config", "--skip-git-repo-check", "-C", dir, "I need the API docs at docs.example.com.")
	proc, err := lab.Start(ns, netlab.Spec{
		Files: map[string]netlab.File{catalog.CodexSystemConfig: {Data: []byte(conf), Mode: 0o644}},
		Argv:  argv,
	})
	if err != nil {
		t.Fatal(err)
	}
	code, err := proc.Wait(2 * time.Minute)
	t.Logf("codex exec: exit %d %v\n%s", code, err, proc.Output())
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
