package firewall_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
)

// mcpClient speaks MCP over a server's stdin and stdout, one JSON line each.
type mcpClient struct {
	t   *testing.T
	in  io.Writer
	out *bufio.Scanner
	id  int
}

func (c *mcpClient) call(method string, params any) map[string]any {
	c.t.Helper()
	c.id++
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.in.Write(append(msg, '\n')); err != nil {
		c.t.Fatal(err)
	}
	if !c.out.Scan() {
		c.t.Fatalf("%s: no answer: %v", method, c.out.Err())
	}
	var resp map[string]any
	if err := json.Unmarshal(c.out.Bytes(), &resp); err != nil || resp["id"] != float64(c.id) {
		c.t.Fatalf("%s: answer %s: %v", method, c.out.Bytes(), err)
	}
	return resp
}

// toolText calls tool name and returns its text and whether it is an error.
func (c *mcpClient) toolText(name string, args map[string]any) (string, bool) {
	c.t.Helper()
	r, _ := c.call("tools/call", map[string]any{"name": name, "arguments": args})["result"].(map[string]any)
	content, _ := r["content"].([]any)
	if len(content) != 1 {
		c.t.Fatalf("tools/call %s: %v", name, r)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text, r["isError"] == true
}

// TestRequestMCP: the MCP server that the agent CLIs load, as agentbox
// generate writes it (the claude golden case's), against the real
// endpoint: its tools ask, and tell the answer.
func TestRequestMCP(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	e := firewall.StartEndpoint(t, firewall.Policy{NeverNames: []string{"secret.example"},
		Requests: &firewall.Requests{Timeout: 10 * time.Minute, Max: time.Hour}})
	data, err := os.ReadFile(filepath.Join("..", "testdata", strings.TrimPrefix(generator.RequestMCPFile, generator.OutDir+"/")))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("const PORT = %d;\n", firewall.RequestPort)
	if !strings.Contains(string(data), want) {
		t.Fatalf("the MCP server has no %q", want)
	}
	script := filepath.Join(t.TempDir(), "request-mcp.js")
	if err := os.WriteFile(script, []byte(strings.Replace(string(data), want, "const PORT = "+e.Port+";\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	c := &mcpClient{t: t, in: in, out: bufio.NewScanner(out)}
	if r := c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "test", "version": "0"}}); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	list, _ := json.Marshal(c.call("tools/list", map[string]any{}))
	if !strings.Contains(string(list), `"name":"request_network_access"`) || !strings.Contains(string(list), `"name":"request_status"`) {
		t.Fatalf("tools/list: %s", list)
	}
	text, isErr := c.toolText("request_network_access", map[string]any{"destination": "docs.example.com", "reason": "read the API docs", "duration": "15m"})
	m := idLine.FindStringSubmatch(text)
	if isErr || m == nil || !strings.Contains(text, "state: pending\n") || !strings.Contains(text, "agentbox approve "+m[1]) {
		t.Fatalf("a request: %v %q", isErr, text)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		e.Answer(t, m[1], "approved", time.Now().Add(15*time.Minute).Unix(), "")
	}()
	if text, isErr := c.toolText("request_status", map[string]any{"id": m[1], "wait": true}); isErr || !strings.Contains(text, "state: approved\nuntil: ") {
		t.Errorf("waiting: %v %q", isErr, text)
	}
	if text, isErr := c.toolText("request_network_access", map[string]any{"destination": "a.secret.example", "reason": "x", "duration": "5m"}); !isErr || !strings.Contains(text, "elevation.never forbids") {
		t.Errorf("a never name: %v %q", isErr, text)
	}
	if text, isErr := c.toolText("request_status", map[string]any{"id": "../x"}); !isErr || !strings.Contains(text, "r and 12 hexadecimal digits") {
		t.Errorf("a bad id: %v %q", isErr, text)
	}
	if r := c.call("no/such", nil); r["error"] == nil {
		t.Errorf("an unknown method: %v", r)
	}
}
