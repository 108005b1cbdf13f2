package fakemodel

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/catalog"
)

// copilotEnv is the environment Copilot CLI runs with: the catalog's, with
// its state under home, and a custom provider (BYOK) at baseURL.
func copilotEnv(t *testing.T, home, baseURL, key string) []string {
	t.Helper()
	agent, _ := catalog.LookupAgent("copilot")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"GIT_AUTHOR_NAME=Copilot CLI (agentbox)", "GIT_AUTHOR_EMAIL=agent@agentbox.invalid",
		"GIT_COMMITTER_NAME=Copilot CLI (agentbox)", "GIT_COMMITTER_EMAIL=agent@agentbox.invalid"}
	for _, e := range agent.Env {
		env = append(env, e.Name+"="+strings.ReplaceAll(e.Value, catalog.Home, home))
	}
	return append(env, "COPILOT_PROVIDER_BASE_URL="+baseURL, "COPILOT_PROVIDER_API_KEY="+key, "COPILOT_MODEL=gpt-4.1")
}

// TestCopilotCLI runs the real Copilot CLI against the fake Chat
// Completions API as its custom provider: the model has it create a file
// and commit it.
func TestCopilotCLI(t *testing.T) {
	copilot := installNPMCLI(t, "@github/copilot", "copilot")
	repo, home := t.TempDir(), t.TempDir()
	fake := NewChat(
		ChatStep{Calls: []ChatCall{{Name: "create", Args: map[string]any{
			"path": filepath.Join(repo, "hello.txt"), "file_text": "hello from the fake model\n"}}}},
		ChatStep{Calls: []ChatCall{{Name: "bash", Args: map[string]any{
			"command": "git add hello.txt && git commit -m 'add hello.txt'", "description": "commit"}}}},
		ChatStep{Text: "Committed hello.txt."},
	)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	const key = "fake-copilot-key-0123"
	env := copilotEnv(t, home, srv.URL+"/v1", key)
	gitIn(t, repo, env, "init", "-q", "-b", "main")
	gitIn(t, repo, env, "commit", "-q", "--allow-empty", "-m", "start")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, copilot, "-p", "Add hello.txt and commit it.", "--allow-all-tools")
	cmd.Dir, cmd.Env = repo, env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("copilot took %.1f s, said:\n%s", time.Since(start).Seconds(), out)
	for _, r := range fake.Requests() {
		t.Logf("request %s %s step %d, %d tool results %q", r.Method, r.Path, r.Step, len(r.ToolResults), r.ToolResults)
	}
	if err != nil {
		t.Fatalf("copilot: %v", err)
	}
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("the fake received no request")
	}
	for _, r := range reqs {
		if r.Authorization != "Bearer "+key {
			t.Errorf("%s %s: Authorization %q, want the user's key", r.Method, r.Path, r.Authorization)
		}
	}
	if log := gitIn(t, repo, env, "log", "--format=%an|%s", "-1"); log != "Copilot CLI (agentbox)|add hello.txt" {
		t.Errorf("last commit %q, want the fake model's", log)
	}
}
