package approval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// TestRequestTimeoutFromConfig: elevation.request_timeout, from
// agentbox.yaml to the agent. A project with a timeout of 2 s is compiled;
// the request endpoint of its generated egress entrypoint runs on loopback
// (as root, dropping to its uid, as the entrypoint starts it); the agent
// asks with --wait through the generated agentbox-request and through the
// generated MCP server, nobody answers, and both learn "timed-out" after
// the 2 s; the host then lists both timed out and the audit log holds
// their timed-out records.
func TestRequestTimeoutFromConfig(t *testing.T) {
	testenv.RequireRoot(t)
	for _, p := range []string{"perl", "node", "bash"} {
		testenv.RequireProgram(t, p)
	}
	files := compileWithTimeout(t, "2s")
	spool, port := startGeneratedEndpoint(t, files)

	start := time.Now()
	script := strings.Replace(string(files[generator.RequestScript]), fmt.Sprintf("readonly PORT=%d\n", firewall.RequestPort), "readonly PORT="+port+"\n", 1)
	cmd := exec.Command("bash", "-c", script, "agentbox-request", "docs.example.com", "--reason", "read the docs", "--for", "5m", "--wait")
	out, err := cmd.Output()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "state: timed-out\n") || time.Since(start) < 2*time.Second {
		t.Errorf("agentbox-request --wait: exit %d after %v (%v)\n%s", code, time.Since(start), err, out)
	}

	start = time.Now()
	text, isError := callMCP(t, strings.Replace(string(files[generator.RequestMCPFile]), fmt.Sprintf("const PORT = %d;", firewall.RequestPort), "const PORT = "+port+";", 1),
		map[string]any{"destination": "198.18.7.9:443", "reason": "the fixtures", "duration": "5m", "wait": true})
	if !isError || !strings.Contains(text, "state: timed-out\n") || time.Since(start) < 2*time.Second {
		t.Errorf("the MCP tool with wait: error %v after %v\n%s", isError, time.Since(start), text)
	}

	// The host: both timed out, and in the audit log.
	h, _, log := host(t, "", nil, nil)
	h.P.Now = time.Now
	h.Tasks = func() ([]string, error) { return nil, nil }
	h.P.Egress = func(_ context.Context, _, _ string, args ...string) (string, error) {
		if !slices.Equal(args, []string{"requests"}) {
			return "", fmt.Errorf("unexpected egress command %q", args)
		}
		return spoolListing(t, spool), nil
	}
	reqs, _, err := h.List(t.Context())
	if err != nil || len(reqs) != 2 || reqs[0].State != TimedOut || reqs[1].State != TimedOut {
		t.Fatalf("List: %+v %v", reqs, err)
	}
	recs, err := audit.Read(log, time.Time{})
	if err != nil || len(recs) != 2 || recs[0].Event != audit.TimedOut || recs[1].Event != audit.TimedOut {
		t.Errorf("audit: %+v %v", recs, err)
	}
}

// compileWithTimeout compiles the agent-claude golden case (an agent on
// node: it has the MCP server) with elevation.request_timeout set.
func compileWithTimeout(t *testing.T, timeout string) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	golden := filepath.Join("..", "testdata", "golden", "agent-claude")
	yaml, err := os.ReadFile(filepath.Join(golden, "agentbox.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(golden, "agentbox.lock"))
	if err != nil {
		t.Fatal(err)
	}
	yaml = append(yaml, "elevation:\n  request_timeout: "+timeout+"\n"...)
	if err := os.WriteFile(filepath.Join(dir, "agentbox.yaml"), yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agentbox.lock"), lock, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := generator.Compile(dir, generator.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Files
}

// startGeneratedEndpoint runs the request endpoint of the generated egress
// entrypoint on a free loopback port, as the entrypoint does, and returns
// its spool and port.
func startGeneratedEndpoint(t *testing.T, files map[string][]byte) (string, string) {
	t.Helper()
	entry := string(files[generator.EgressProgramDir+"/entrypoint.sh"])
	_, quoted, ok := strings.Cut(entry, "\nreadonly REQUESTS_PL=")
	prog, ok2 := singleQuoted(quoted)
	if !ok || !ok2 {
		t.Fatalf("the generated entrypoint has no request endpoint")
	}
	// The policy's arguments, as the entrypoint passes them from policy.bash.
	policy := filepath.Join(t.TempDir(), "policy.bash")
	if err := os.WriteFile(policy, files[generator.EgressDir+"/policy.bash"], 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", `. "$1"; printf '%s\0' "$REQUESTS_TIMEOUT" "$REQUESTS_MAX_SECONDS" "${NEVER_NAMES[*]}" "$(printf '%s\n' "${NEVER_RANGES[@]}")"`, "bash", policy).Output()
	args := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if err != nil || len(args) != 4 || args[0] != "2" {
		t.Fatalf("the generated policy.bash: %v, %q; want a request endpoint with a timeout of 2 s", err, args)
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // the endpoint's uid reaches its spool
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spool, answers := filepath.Join(dir, "requests"), filepath.Join(dir, "answers")
	if err := os.Mkdir(answers, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	hosts := filepath.Join(dir, "hosts") // the entrypoint's list of the host's addresses
	if err := os.WriteFile(hosts, []byte("198.19.255.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("perl", append([]string{"-e", prog, "127.0.0.1", port, spool, answers, strconv.Itoa(firewall.RequestUID), hosts}, args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; i < 300; i++ {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			return spool, port
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the endpoint does not listen")
	return "", ""
}

// callMCP runs the MCP server script with node, calls request_network_access
// with args, and returns the result's text and whether it is an error.
func callMCP(t *testing.T, script string, args map[string]any) (string, bool) {
	t.Helper()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-06-18"}})
	enc.Encode(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	enc.Encode(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "request_network_access", "arguments": args}})
	cmd := exec.Command("node", "-e", script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() }()
	if _, err := stdin.Write(in.Bytes()); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
				IsError bool                    `json:"isError"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.ID == 2 && len(msg.Result.Content) > 0 {
			return msg.Result.Content[0].Text, msg.Result.IsError
		}
	}
	t.Fatalf("the MCP server gave no result: %v", sc.Err())
	return "", false
}

// spoolListing is the egress entrypoint's requests: each spooled request
// under a "request ID" line, its answer if any, an empty line.
func spoolListing(t *testing.T, spool string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(spool, "r*.req"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "request %s\n%s\n", strings.TrimSuffix(filepath.Base(n), ".req"), data)
	}
	return out.String()
}

// singleQuoted reads the shell word at the start of s, single-quoted
// pieces and \' between them (as shquote.Word writes it), up to the end
// of its line; false if it is not one.
func singleQuoted(s string) (string, bool) {
	var b strings.Builder
	for {
		switch {
		case strings.HasPrefix(s, "'"):
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(s[1 : 1+end])
			s = s[2+end:]
		case strings.HasPrefix(s, `\'`):
			b.WriteByte('\'')
			s = s[2:]
		default:
			return b.String(), b.Len() > 0 && (s == "" || s[0] == '\n')
		}
	}
}
