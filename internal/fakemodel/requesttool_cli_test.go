package fakemodel

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// TestClaudeCodeAsksForAGrant runs the real Claude Code against the
// Anthropic fake, which asks it to call agentbox's MCP tool
// (request_network_access): with the MCP configuration and the MCP server
// that agentbox generates, the CLI starts the server, calls the tool, and
// the request reaches the request endpoint (the egress's, run here on
// loopback in the same network namespace) and its spool.
func TestClaudeCodeAsksForAGrant(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "ip")
	testenv.RequireProgram(t, "perl")
	testenv.RequireProgram(t, "node")
	claude := claudeInstall(t)
	home, err := os.MkdirTemp("", "agentbox-claude-mcp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	if err := os.Chmod(home, 0o755); err != nil { // the endpoint's uid reaches its spool
		t.Fatal(err)
	}
	const uid = 65534 // nobody
	spool, answers := filepath.Join(home, "spool"), filepath.Join(home, "answers")
	if err := os.Mkdir(answers, 0o755); err != nil {
		t.Fatal(err)
	}

	// The generated MCP server and Claude Code's managed MCP configuration,
	// the server's path moved to where this test keeps it.
	script, err := os.ReadFile(filepath.Join("..", "..", "testdata", strings.TrimPrefix(generator.RequestMCPFile, generator.OutDir+"/")))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, "request-mcp.js"), script)
	a, _ := catalog.LookupAgent("claude")
	files, err := generator.AgentFiles(a, a.Env, config.DefaultWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	mcp := strings.Replace(string(files[catalog.ClaudeManagedMCP]), generator.RequestMCPScript, filepath.Join(home, "request-mcp.js"), 1)
	writeFile(t, filepath.Join(home, "mcp.json"), []byte(mcp))
	writeFile(t, filepath.Join(home, "managed-settings.json"), []byte(claudeManagedSettings(t)))
	if err := chownTree(home, uid); err != nil {
		t.Fatal(err)
	}
	prog, err := firewall.RequestsProgram()
	if err != nil {
		t.Fatal(err)
	}

	fake := NewAnthropic("")
	fake.Tool = "mcp__agentbox__request_network_access"
	fake.Input = map[string]any{"destination": "docs.example.com", "reason": "read the API docs", "duration": "15m"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var endpoint *exec.Cmd
	out, err := inOwnNetns(t, fake, func(url string) *exec.Cmd {
		// The endpoint in this namespace, on its own address and port.
		endpoint = exec.Command("perl", endpointArgs(t, prog, spool, answers)...)
		endpoint.Stderr = os.Stderr
		if err := endpoint.Start(); err != nil {
			t.Errorf("starting the endpoint: %v", err)
		}
		for i := 0; i < 300; i++ {
			if c, err := net.Dial("tcp", net.JoinHostPort(firewall.RequestAddr, strconv.Itoa(firewall.RequestPort))); err == nil {
				c.Close()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cmd := exec.CommandContext(ctx, claude, "-p", "I need the API docs at docs.example.com.",
			"--settings", filepath.Join(home, "managed-settings.json"), "--mcp-config", filepath.Join(home, "mcp.json"),
			"--strict-mcp-config", "--output-format", "text")
		cmd.Dir = home
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
			"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-agentbox-fake-0123456789",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		return cmd
	})
	if endpoint != nil && endpoint.Process != nil {
		endpoint.Process.Kill()
		endpoint.Wait()
	}
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	results := strings.Join(fake.ToolResults(), "\n")
	m := regexp.MustCompile(`(?m)^id: (r[0-9a-f]{12})$`).FindStringSubmatch(results)
	if m == nil || !strings.Contains(results, "state: pending") || !strings.Contains(results, "agentbox approve "+m[1]) {
		t.Fatalf("the tool's result that reached the model: %q\nclaude said: %s", results, out)
	}
	spooled, err := os.ReadFile(filepath.Join(spool, m[1]+".req"))
	if err != nil || !strings.Contains(string(spooled), "\ndest docs.example.com:443\nseconds 900\n") ||
		!strings.Contains(string(spooled), fmt.Sprintf("\nreason %x\n", "read the API docs")) {
		t.Errorf("the spooled request %q: %v", spooled, err)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGeminiCLIAsksForAGrant: the real Gemini CLI, with the system
// defaults agentbox generates (which register the MCP server and trust
// it), calls request_network_access when the fake model asks, without
// --yolo (gemini -p offers no tool that needs a confirmation), and the
// request reaches the endpoint's spool (run in the CLI's own network
// namespace).
func TestGeminiCLIAsksForAGrant(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "ip")
	testenv.RequireProgram(t, "perl")
	gemini := installNPMCLI(t, "@google/gemini-cli", "gemini")
	home, err := os.MkdirTemp("", "agentbox-gemini-mcp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	spool, answers := filepath.Join(home, "spool"), filepath.Join(home, "answers")
	if err := os.Mkdir(answers, 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "testdata", strings.TrimPrefix(generator.RequestMCPFile, generator.OutDir+"/")))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, "request-mcp.js"), script)
	env := geminiSettings(t, home, home)
	for _, e := range env {
		if path, ok := strings.CutPrefix(e, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH="); ok {
			b, err := os.ReadFile(path)
			if err != nil || !strings.Contains(string(b), generator.RequestMCPScript) {
				t.Fatalf("the system defaults do not name the MCP server: %s %v", b, err)
			}
			writeFile(t, path, []byte(strings.Replace(string(b), generator.RequestMCPScript, filepath.Join(home, "request-mcp.js"), 1)))
		}
	}
	prog, err := firewall.RequestsProgram()
	if err != nil {
		t.Fatal(err)
	}
	fake := NewGemini(
		GeminiStep{Calls: []GeminiCall{{Name: "mcp_agentbox_request_network_access", Args: map[string]any{
			"destination": "docs.example.com", "reason": "read the API docs", "duration": "15m"}}}},
		GeminiStep{Text: "Asked."},
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var endpoint *exec.Cmd
	out, err := inOwnNetns(t, fake, func(url string) *exec.Cmd {
		endpoint = exec.Command("perl", endpointArgs(t, prog, spool, answers)...)
		endpoint.Stderr = os.Stderr
		if err := endpoint.Start(); err != nil {
			t.Errorf("starting the endpoint: %v", err)
		}
		for i := 0; i < 300; i++ {
			if c, err := net.Dial("tcp", net.JoinHostPort(firewall.RequestAddr, strconv.Itoa(firewall.RequestPort))); err == nil {
				c.Close()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cmd := exec.CommandContext(ctx, gemini, "-p", "I need the API docs at docs.example.com.")
		cmd.Dir = home
		cmd.Env = append(env, "HOME="+home, "PATH="+os.Getenv("PATH"), "GEMINI_API_KEY=fake-gemini-key-0123", "GOOGLE_GEMINI_BASE_URL="+url)
		return cmd
	})
	if endpoint != nil && endpoint.Process != nil {
		endpoint.Process.Kill()
		endpoint.Wait()
	}
	if err != nil {
		t.Fatalf("gemini: %v\n%s", err, out)
	}
	var results []string
	for _, r := range fake.Requests() {
		for _, f := range r.FunctionResponses {
			results = append(results, f.Name+": "+string(f.Response))
		}
	}
	joined := strings.Join(results, "\n")
	m := regexp.MustCompile(`id: (r[0-9a-f]{12})`).FindStringSubmatch(joined)
	if m == nil || !strings.Contains(joined, "state: pending") {
		t.Fatalf("the tool's results that reached the model: %q\ngemini said: %s", joined, out)
	}
	if _, err := os.Stat(filepath.Join(spool, m[1]+".req")); err != nil {
		t.Errorf("the request is not spooled: %v", err)
	}
}

// endpointArgs are perl's arguments for the request endpoint prog, as the
// egress entrypoint starts it, on its address and port, with spool and
// answers, and a list of the host's addresses beside the spool that holds
// none (the tests ask for names).
func endpointArgs(t *testing.T, prog []byte, spool, answers string) []string {
	t.Helper()
	hosts := filepath.Join(filepath.Dir(spool), "hosts")
	if err := os.WriteFile(hosts, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	policy, err := firewall.RequestsArgs(firewall.Policy{Requests: &firewall.Requests{Timeout: 10 * time.Minute, Max: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"-e", string(prog), firewall.RequestAddr, strconv.Itoa(firewall.RequestPort), spool, answers,
		strconv.Itoa(firewall.RequestUID), hosts}, policy...)
}
