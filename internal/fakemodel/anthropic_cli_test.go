package fakemodel

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// claudePackage is Claude Code's npm package.
const claudePackage = "@anthropic-ai/claude-code"

// claudeInstall installs the real Claude Code with npm from npm's configured
// registry into a directory kept across runs under $AGENTBOX_E2E_STATE
// (/var/tmp/agentbox-e2e) and returns its claude program. It skips (fails
// under CI=true) when npm or the registry is unavailable.
func claudeInstall(t *testing.T) string {
	t.Helper()
	npm := testenv.RequireProgram(t, "npm")
	state := os.Getenv("AGENTBOX_E2E_STATE")
	if state == "" {
		state = "/var/tmp/agentbox-e2e"
	}
	dir := filepath.Join(state, "claude-code-host")
	bin := filepath.Join(dir, "node_modules", ".bin", "claude")
	if out, err := exec.Command(bin, "--version").CombinedOutput(); err == nil {
		t.Logf("claude %s (cached in %s)", strings.TrimSpace(string(out)), dir)
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--no-update-notifier", "--prefix", dir, claudePackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		testenv.Unavailable(t, "npm install "+claudePackage+" failed (is the npm registry reachable?): "+err.Error()+"\n"+string(out))
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("claude --version after npm install: %v\n%s", err, out)
	}
	t.Logf("installed claude %s in %s", strings.TrimSpace(string(out)), time.Since(start).Round(time.Millisecond))
	return bin
}

// claudeCommit is the command the fake asks Claude Code's Bash tool to run.
const claudeCommit = `printf 'written by claude\n' > CLAUDE-FAKE.txt && git add CLAUDE-FAKE.txt && git commit -q -m 'claude: add CLAUDE-FAKE.txt'`

// TestClaudeCodeAgainstFake runs the real Claude Code, non-interactively and as
// an unprivileged user, against the Anthropic fake in a network namespace of
// its own (loopback only: whatever else the CLI tries to reach fails there),
// and checks that the fake's tool call made the commit and that the model
// received the key the user gave.
func TestClaudeCodeAgainstFake(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "ip")
	testenv.RequireProgram(t, "git")
	claude := claudeInstall(t)

	// t.TempDir's parent is root's alone: the unprivileged user needs a
	// directory it can reach.
	home, err := os.MkdirTemp("", "agentbox-claude-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	repo := filepath.Join(home, "repo")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")
	const uid = 65534 // nobody
	if err := chownTree(home, uid); err != nil {
		t.Fatal(err)
	}

	// The catalog's managed settings, which the agent image holds, passed
	// as --settings here: the CLI runs its tools with no permission flag.
	settings := filepath.Join(home, "managed-settings.json")
	if err := os.WriteFile(settings, []byte(claudeManagedSettings(t)), 0o644); err != nil {
		t.Fatal(err)
	}

	fake := NewAnthropic(claudeCommit)
	const key = "sk-ant-agentbox-fake-0123456789"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := inOwnNetns(t, fake, func(url string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, claude, "-p", "Write CLAUDE-FAKE.txt and commit it.",
			"--settings", settings, "--output-format", "text")
		cmd.Dir = repo
		cmd.Env = []string{
			"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
			"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=" + key,
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=Claude Code (agentbox)", "GIT_AUTHOR_EMAIL=agent@agentbox.invalid",
			"GIT_COMMITTER_NAME=Claude Code (agentbox)", "GIT_COMMITTER_EMAIL=agent@agentbox.invalid",
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		return cmd
	})
	for _, r := range fake.Requests() {
		t.Logf("model request: %s %s", r.Method, r.Path)
	}
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	t.Logf("claude said: %s", bytes.TrimSpace(out))
	if got := git("log", "-1", "--format=%s"); got != "claude: add CLAUDE-FAKE.txt" {
		t.Errorf("last commit %q, want the fake's commit; tool results: %q", got, fake.ToolResults())
	}
	if !strings.Contains(string(out), AnthropicFinalText) {
		t.Errorf("claude's output lacks the fake's final text")
	}
	checkAnthropicKey(t, fake, key)
}

// claudeManagedSettings returns the catalog's managed settings of Claude Code.
func claudeManagedSettings(t *testing.T) string {
	a, _ := catalog.LookupAgent("claude")
	files, err := generator.AgentFiles(a, a.Env, config.DefaultWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := files[catalog.ClaudeManagedSettings]
	if !ok {
		t.Fatal("the catalog has no managed settings for claude")
	}
	return string(b)
}

// checkAnthropicKey fails unless every request to the Messages API carried
// key in x-api-key.
func checkAnthropicKey(t *testing.T, fake *Anthropic, key string) {
	t.Helper()
	n := 0
	for _, r := range fake.Requests() {
		if !strings.HasPrefix(r.Path, "/v1/messages") {
			continue
		}
		n++
		if got := r.Header.Get("x-api-key"); got != key {
			t.Errorf("%s %s: x-api-key %q, want %q (authorization %q)", r.Method, r.Path, got, key, r.Header.Get("authorization"))
		}
	}
	if n == 0 {
		t.Errorf("the model received no Messages request")
	}
}

func chownTree(root string, uid int) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// inOwnNetns serves h on loopback in a new network namespace and runs the
// command that mk builds (given the server's URL) in that namespace, so that
// the command reaches nothing but h. The namespace lives on one locked
// thread, which is discarded afterwards.
func inOwnNetns(t *testing.T, h http.Handler, mk func(url string) *exec.Cmd) ([]byte, error) {
	t.Helper()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fail := func(err error) { done <- result{nil, err} }
		if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
			fail(err)
			return
		}
		if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
			done <- result{out, err}
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fail(err)
			return
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(ln)
		defer srv.Close()
		out, err := mk("http://" + ln.Addr().String()).CombinedOutput()
		done <- result{out, err}
	}()
	r := <-done
	return r.out, r.err
}
