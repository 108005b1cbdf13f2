package generator

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// TestGitTrustsWorkspaceWithoutConfigFiles: a tool that tells git to skip
// its global and system configuration (Gemini CLI does, for its shell
// commands) still finds the workspace trusted (safe.directory), from the
// environment the agent Dockerfile sets, though another user owns it (a
// locked profile's clone, the project directory in direct mode).
func TestGitTrustsWorkspaceWithoutConfigFiles(t *testing.T) {
	testenv.RequireRoot(t) // to give the repository to another user
	files, err := generate(filepath.Join(goldenDir, "agent-gemini"))
	if err != nil {
		t.Fatal(err)
	}
	env := dockerfileEnv(t, files[AgentDockerfile])

	root := t.TempDir()
	repo := filepath.Join(root, "workspace")
	git := func(env []string, args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + root}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := git(nil, "init", "-q"); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if err := filepath.Walk(repo, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 4242, 4242)
	}); err != nil {
		t.Fatal(err)
	}
	skip := []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := git(skip, "status"); err == nil || !strings.Contains(out, "dubious ownership") {
		t.Fatalf("without the image's environment git trusts another user's repository (%v): %s", err, out)
	}
	var workspaceEnv []string
	for _, kv := range env {
		workspaceEnv = append(workspaceEnv, strings.ReplaceAll(kv, config.DefaultWorkspace, repo))
	}
	if out, err := git(append(workspaceEnv, skip...), "status"); err != nil {
		t.Errorf("with the image's environment (%q), git refuses the workspace: %v: %s", workspaceEnv, err, out)
	}
}

// dockerfileEnv returns the NAME=VALUE pairs of a Dockerfile's ENV
// instructions.
func dockerfileEnv(t *testing.T, dockerfile []byte) []string {
	t.Helper()
	res, err := parser.Parse(bytes.NewReader(dockerfile))
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, n := range res.AST.Children {
		if !strings.EqualFold(n.Value, "env") {
			continue
		}
		for kv := n.Next; kv != nil && kv.Next != nil; kv = kv.Next.Next.Next {
			env = append(env, kv.Value+"="+strings.Trim(kv.Next.Value, `"`))
			if kv.Next.Next == nil {
				break
			}
		}
	}
	return env
}
