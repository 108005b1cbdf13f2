package firewall_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
)

// requestCommand is agentbox-request as agentbox generate writes it (a
// golden case's), its port the endpoint's of this test.
func requestCommand(t *testing.T, port string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", strings.TrimPrefix(generator.RequestScript, generator.OutDir+"/")))
	if err != nil {
		t.Fatal(err)
	}
	script := string(data)
	want := fmt.Sprintf("readonly PORT=%d\n", firewall.RequestPort)
	if !strings.Contains(script, want) {
		t.Fatalf("agentbox-request has no %q", want)
	}
	path := filepath.Join(t.TempDir(), "agentbox-request")
	if err := os.WriteFile(path, []byte(strings.Replace(script, want, "readonly PORT="+port+"\n", 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs agentbox-request with args and returns its exit status and
// output.
func run(t *testing.T, cmd string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := exec.Command("bash", append([]string{cmd}, args...)...)
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

var idLine = regexp.MustCompile(`(?m)^id: (r[0-9a-f]{12})$`)

// TestRequestCommand: the agent's command against the real endpoint: a
// request pends, the answer reaches it (with --wait too), refusals and
// timeouts end it with status 1, and every byte of the reason reaches the
// spool as written.
func TestRequestCommand(t *testing.T) {
	e := firewall.StartEndpoint(t, firewall.Policy{NeverNames: []string{"secret.example"},
		Requests: &firewall.Requests{Timeout: 3 * time.Second, Max: time.Hour}})
	cmd := requestCommand(t, e.Port)
	reason := "fetch the fixtures: caf\xc3\xa9 & 100% \x1b[2J \"quoted\" +plus"
	code, out, errOut := run(t, cmd, "fixtures.example.com:443,8443", "--reason", reason, "--for", "15m")
	m := idLine.FindStringSubmatch(out)
	if code != 3 || m == nil || !strings.Contains(out, "state: pending\n") || !strings.Contains(errOut, "agentbox approve "+m[1]) {
		t.Fatalf("a request: exit %d\n%s%s", code, out, errOut)
	}
	id := m[1]
	spooled, err := os.ReadFile(filepath.Join(e.Spool, id+".req"))
	if err != nil || !strings.Contains(string(spooled), fmt.Sprintf("\nreason %x\n", reason)) || !strings.Contains(string(spooled), "\nseconds 900\n") {
		t.Fatalf("spooled %q: %v", spooled, err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		e.Answer(t, id, "approved", time.Now().Add(15*time.Minute).Unix(), "")
	}()
	if code, out, errOut := run(t, cmd, "--status", id, "--wait"); code != 0 || !strings.Contains(out, "state: approved\nuntil: ") {
		t.Fatalf("--wait for an approval: exit %d\n%s%s", code, out, errOut)
	}
	_, out, _ = run(t, cmd, "198.18.9.9", "--reason", "x", "--for", "5m")
	id = idLine.FindStringSubmatch(out)[1]
	e.Answer(t, id, "denied", 0, "use the mirror")
	if code, out, _ := run(t, cmd, "--status", id); code != 1 || !strings.Contains(out, "state: denied\nnote: use the mirror\n") {
		t.Errorf("a denial: exit %d\n%s", code, out)
	}
	if code, out, _ := run(t, cmd, "git.secret.example", "--reason", "x", "--for", "5m"); code != 1 || !strings.Contains(out, "state: refused\n") ||
		!strings.Contains(out, "git.secret.example overlaps secret.example, which elevation.never forbids") {
		t.Errorf("a never name: exit %d\n%s", code, out)
	}
	if code, out, errOut := run(t, cmd, "10.0.0.1", "--reason", "x", "--for", "5m"); code != 1 || !strings.Contains(out, "10.0.0.1 overlaps 10.0.0.0/8") {
		t.Errorf("a private address: exit %d\n%s%s", code, out, errOut)
	}
	start := time.Now()
	if code, out, errOut := run(t, cmd, "example.org", "--reason", "x", "--for", "5m", "--wait"); code != 1 || !strings.Contains(out, "state: timed-out\n") || time.Since(start) < 3*time.Second {
		t.Errorf("unanswered: exit %d after %v\n%s%s", code, time.Since(start), out, errOut)
	}
	for _, args := range [][]string{{}, {"example.org"}, {"example.org", "--reason", "x"}, {"--status", "../etc"}, {"a", "b", "--reason", "x", "--for", "1m"}} {
		if code, _, _ := run(t, cmd, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}
