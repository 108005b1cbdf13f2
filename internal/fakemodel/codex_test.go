package fakemodel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/testing/dnswire"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// codexCache holds the real Codex CLIs that the test installed from the npm
// registry, one directory per version, kept across runs.
const codexCache = "/var/tmp/agentbox-e2e/npm-clis"

// codexScript is what the fake model asks Codex to run: write a file, add
// and commit it.
const codexScript = `printf 'written by codex through the fake model\n' > CODEX.md && git add CODEX.md && git commit -q -m 'codex: add CODEX.md'`

// TestCodexCLI runs the real Codex CLI (from the npm registry that npm is
// configured for) headless in a git repository against the fake Responses
// API, with the provider configuration agentbox generates, and checks that
// the commit the model asked for is made, that the model endpoint got the
// user's key, and that Codex looked up no other name. Codex runs in a
// network namespace of the test's own with only a loopback: the fake model
// and a DNS server that records every question and answers none are all it
// can reach.
func TestCodexCLI(t *testing.T) {
	testenv.RequireRoot(t)
	for _, p := range []string{"ip", "unshare", "setpriv"} {
		testenv.RequireProgram(t, p)
	}
	codex := codexInstall(t)
	lab := netlab.New(t, "")
	ns := lab.Namespace("codex")
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
	home := filepath.Join(lab.Dir(), "codex-home")
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
	agent, _ := catalog.LookupAgent("codex")
	files, err := generator.AgentFiles(agent, []catalog.EnvVar{{Name: "OPENAI_BASE_URL", Value: srv.URL + "/v1"}}, config.DefaultWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	config := files[catalog.CodexSystemConfig]
	if len(config) == 0 {
		t.Fatalf("agentbox generates no %s for codex", catalog.CodexSystemConfig)
	}
	const key = "sk-agentbox-test-key"
	env := append(codexGitEnv(), "CODEX_HOME="+home, "HOME="+home, "OPENAI_API_KEY="+key, "PATH="+os.Getenv("PATH"))
	// --strict-config: Codex knows every key agentbox writes.
	argv := append(append([]string{"env", "-i"}, env...), codex, "exec", "--strict-config", "-C", repo, "add a file and commit it")
	proc, err := lab.Start(ns, netlab.Spec{
		Files: map[string]netlab.File{
			"/etc/resolv.conf":        {Data: []byte("nameserver 127.0.0.1\n"), Mode: 0o644},
			catalog.CodexSystemConfig: {Data: config, Mode: 0o644},
		},
		Argv: argv,
	})
	if err != nil {
		t.Fatal(err)
	}
	code, err := proc.Wait(2 * time.Minute)
	t.Logf("codex exec: exit %d %v\n%s", code, err, proc.Output())
	for i, r := range fake.OpenAIRequests() {
		t.Logf("request %d: %s %s tool=%q output=%q", i, r.Method, r.Path, r.Tool, r.Output)
	}
	if err != nil || code != 0 {
		t.Fatalf("codex exec failed: exit %d %v", code, err)
	}
	log, err := codexGit(repo, "log", "-1", "--format=%s", "--name-only").CombinedOutput()
	if err != nil || !strings.Contains(string(log), "codex: add CODEX.md\n\nCODEX.md") {
		t.Fatalf("the commit the model asked for is not in the repository: %v: %s", err, log)
	}
	var calls, outputs int
	for _, r := range fake.OpenAIRequests() {
		if r.Authorization != "Bearer "+key {
			t.Errorf("%s %s: Authorization %q, want the user's key", r.Method, r.Path, r.Authorization)
		}
		if r.Tool != "" {
			calls++
		}
		if r.Output != "" {
			outputs++
		}
	}
	if calls == 0 || outputs == 0 {
		t.Errorf("the fake called a tool %d times and got %d tool outputs; want both", calls, outputs)
	}
	if names := asked(); len(names) > 0 {
		t.Errorf("codex looked up names beyond its model endpoint: %q", names)
	}
}

// codexInNamespace runs listen on an OS thread that has joined network
// namespace ns; the sockets it opens stay in ns. The thread goes back to
// the test's namespace afterwards: the lab kills every process that has a
// thread in its namespaces when it closes.
func codexInNamespace(t *testing.T, ns string, listen func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer own.Close()
		f, err := os.Open(filepath.Join("/run/netns", ns))
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		err = listen()
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked: it ends with the goroutine.
			errc <- fmt.Errorf("setns back: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// codexRecordDNS answers every question on conn with REFUSED and returns a
// function that lists the names asked so far, sorted.
func codexRecordDNS(conn net.PacketConn) func() []string {
	var mu sync.Mutex
	asked := map[string]bool{}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			q, err := dnswire.ParseQuery(buf[:n])
			if err != nil {
				continue
			}
			mu.Lock()
			asked[q.Name] = true
			mu.Unlock()
			if reply, err := dnswire.BuildReply(q, 5, nil); err == nil {
				_, _ = conn.WriteTo(reply, from)
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(maps.Keys(asked))
	}
}

// codexInstall returns the codex program of the newest @openai/codex,
// installed with npm into codexCache on first use. It skips (fails under
// CI=true) when npm or its registry cannot be reached.
func codexInstall(t *testing.T) string {
	t.Helper()
	npm := testenv.RequireProgram(t, "npm")
	testenv.RequireProgram(t, "git")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "view", "@openai/codex", "version").Output()
	version := strings.TrimSpace(string(out))
	if err != nil || version == "" {
		testenv.Unavailable(t, "the npm registry does not answer for @openai/codex ("+codexErr(err)+")")
	}
	dir := filepath.Join(codexCache, "openai-codex@"+version)
	bin := filepath.Join(dir, "node_modules", ".bin", "codex")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(codexCache, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(codexCache, ".install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	install := exec.CommandContext(ctx, npm, "install", "--no-fund", "--no-audit", "--no-save", "--prefix", tmp, "@openai/codex@"+version)
	if out, err := install.CombinedOutput(); err != nil {
		testenv.Unavailable(t, "npm install @openai/codex@"+version+" failed ("+codexErr(err)+"): "+string(out))
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
	return bin
}

func codexErr(err error) string {
	if err == nil {
		return "no version"
	}
	return err.Error()
}

// codexGit runs git in dir with a fixed identity and no user configuration.
func codexGit(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(codexGitEnv(), "PATH="+os.Getenv("PATH"))
	return cmd
}

func codexGitEnv() []string {
	return []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Codex (agentbox)", "GIT_AUTHOR_EMAIL=codex@agentbox.invalid",
		"GIT_COMMITTER_NAME=Codex (agentbox)", "GIT_COMMITTER_EMAIL=codex@agentbox.invalid"}
}
