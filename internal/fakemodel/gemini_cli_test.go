package fakemodel

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// TestGeminiCLI runs the real Gemini CLI, installed from the npm registry
// npm is configured for, against the fake: the model asks it to write a
// file and commit it, and the commit must be in the repository, made with
// the key the user gave.
func TestGeminiCLI(t *testing.T) {
	gemini := installNPMCLI(t, "@google/gemini-cli", "gemini")
	repo := t.TempDir()
	home := t.TempDir()
	gitEnv := []string{"HOME=" + home, "GIT_AUTHOR_NAME=Gemini CLI (agentbox)", "GIT_AUTHOR_EMAIL=agent@agentbox.invalid",
		"GIT_COMMITTER_NAME=Gemini CLI (agentbox)", "GIT_COMMITTER_EMAIL=agent@agentbox.invalid"}
	gitIn(t, repo, gitEnv, "init", "-q", "-b", "main")
	gitIn(t, repo, gitEnv, "commit", "-q", "--allow-empty", "-m", "start")

	fake := NewGemini(
		GeminiStep{Calls: []GeminiCall{{Name: "write_file", Args: map[string]any{
			"file_path": filepath.Join(repo, "hello.txt"), "content": "hello from the fake model\n"}}}},
		GeminiStep{Calls: []GeminiCall{{Name: "run_shell_command", Args: map[string]any{
			"command": "git add hello.txt && git commit -m 'add hello.txt'", "description": "commit"}}}},
		GeminiStep{Text: "Committed hello.txt."},
	)
	srv := httptest.NewServer(fake)
	defer srv.Close()

	env := append(gitEnv, "PATH="+os.Getenv("PATH"))
	env = append(env, geminiSettings(t, home, repo)...)
	const key = "fake-gemini-key-0123"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gemini, "--yolo", "-p", "Add hello.txt and commit it.")
	cmd.Dir = repo
	cmd.Env = append(env, "GEMINI_API_KEY="+key, "GOOGLE_GEMINI_BASE_URL="+srv.URL)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("gemini took %.1f s, said:\n%s", time.Since(start).Seconds(), out)
	for _, r := range fake.Requests() {
		t.Logf("request %s %s step %d, %d tool results", r.Method, r.Path, r.Step, len(r.FunctionResponses))
	}
	if err != nil {
		t.Fatalf("gemini: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "[STARTUP] ") {
			// The CLI's start-up profiler, on its own timing ("Phase
			// 'cleanup_ops' was started but never ended. Skipping
			// metrics."): not about the settings.
			continue
		}
		for _, warn := range []string{"not trusted", "Skipping", "insecure", "Invalid"} {
			if strings.Contains(line, warn) {
				t.Errorf("gemini warned %q (%q): the settings agentbox generates do not hold", warn, line)
			}
		}
	}
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("the fake received no request")
	}
	for _, r := range reqs {
		if r.Key != key {
			t.Errorf("%s %s: key %q, want the user's %q", r.Method, r.Path, r.Key, key)
		}
	}
	if last := reqs[len(reqs)-1]; last.Step != 2 || len(last.FunctionResponses) != 2 {
		t.Errorf("the last request answered step %d after %d tool results, want step 2 after 2", last.Step, len(last.FunctionResponses))
	}
	log := gitIn(t, repo, gitEnv, "log", "--format=%an|%s", "-1")
	if log != "Gemini CLI (agentbox)|add hello.txt" {
		t.Errorf("last commit %q, want the fake model's", log)
	}
}

// geminiSettings writes the files agentbox puts in the image for Gemini
// CLI, with repo for the workspace, and returns the environment that names
// them: the catalog's, with the system defaults' path where Gemini CLI
// reads it (a directory root owns all the way up; without root, the
// user's settings instead).
func geminiSettings(t *testing.T, home, repo string) []string {
	t.Helper()
	agent, _ := catalog.LookupAgent("gemini")
	files, err := generator.AgentFiles(agent, agent.Env, repo)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".gemini")
	if os.Geteuid() == 0 {
		cache, err := os.UserCacheDir()
		if err == nil {
			dir, err = os.MkdirTemp(cache, "agentbox-gemini-")
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, e := range agent.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	for imagePath, body := range files {
		name := path.Base(imagePath)
		if name == "system-defaults.json" && os.Geteuid() != 0 {
			name = "settings.json"
		}
		local := filepath.Join(dir, name)
		if err := os.WriteFile(local, body, 0o644); err != nil {
			t.Fatal(err)
		}
		// Every file's path in the image is named by the catalog's
		// environment or is where Gemini CLI looks; here each is named.
		for i, e := range env {
			env[i] = strings.ReplaceAll(e, "="+imagePath, "="+local)
		}
		if name == "system-defaults.json" {
			env = append(env, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH="+local)
		}
	}
	return env
}

func gitIn(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(env, "PATH="+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// installNPMCLI installs the newest version of an agent CLI's npm package
// into a cache under /var/tmp/agentbox-e2e (once per version) and returns
// its executable bin. It skips, or fails under CI=true, when the npm
// registry npm is configured for does not answer.
func installNPMCLI(t *testing.T, pkg, bin string) string {
	t.Helper()
	npm := testenv.RequireProgram(t, "npm")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "view", pkg, "version").CombinedOutput()
	if err != nil {
		testenv.Unavailable(t, "the npm registry does not answer ("+firstLine(out)+")")
	}
	version := strings.TrimSpace(string(out))
	cache := filepath.Join("/var/tmp/agentbox-e2e", "npm-cli")
	dir := filepath.Join(cache, strings.NewReplacer("@", "", "/", "-").Replace(pkg)+"-"+version)
	exe := filepath.Join(dir, "node_modules", ".bin", bin)
	if _, err := os.Stat(exe); err == nil {
		return exe
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(cache, ".install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", tmp, "--no-fund", "--no-audit", "--no-update-notifier", pkg+"@"+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s@%s: %v\n%s", pkg, version, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	return exe
}

func firstLine(out []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
