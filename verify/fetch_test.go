package verify

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// fakeExec is a docker whose `compose ... exec -T agent CMD...` runs CMD
// here (or, with replace, runs replace instead).
func fakeExec(t *testing.T, replace string) []string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "docker")
	run := `exec "$@"`
	if replace != "" {
		run = replace
	}
	script := "#!/bin/bash\nshift 5 # compose -f FILE -p NAME\n[ \"$1 $2 $3\" = \"exec -T agent\" ] || exit 9\nshift 3\n" + run + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{bin, "compose", "-f", "x.yml", "-p", "x"}
}

func agentClone(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "start"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v: %s", args, err, out)
		}
	}
	return ws
}

func TestFetchProbe(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	ctx := context.Background()

	t.Run("refused", func(t *testing.T) {
		ws := agentClone(t)
		p := FetchProbe(ctx, sandbox.ComposeOf(fakeExec(t, "")), &config.Config{Workspace: ws})
		if p.Result != "PASS" || !strings.Contains(p.Happened, ".vscode/tasks.json") || !strings.Contains(p.Happened, "lib") {
			t.Fatalf("%+v", p)
		}
		out, _ := exec.Command("git", "-C", ws, "branch", "--list", fetchProbeBranch).Output()
		if len(out) != 0 {
			t.Errorf("the probe left its branch in the clone: %s", out)
		}
	})
	t.Run("writable .vscode: the gitlink is still refused", func(t *testing.T) {
		ws := agentClone(t)
		p := FetchProbe(ctx, sandbox.ComposeOf(fakeExec(t, "")), &config.Config{Workspace: ws, Writable: []string{".vscode"}})
		if p.Result != "PASS" || strings.Contains(p.Happened, ".vscode") || !strings.Contains(p.Happened, "lib") {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("a gate that lets it through fails", func(t *testing.T) {
		// This docker bundles an ordinary commit instead: fetch accepts it,
		// and the probe must say so.
		ws := agentClone(t)
		clean := `cd "$5" && git update-ref refs/heads/` + fetchProbeBranch + ` HEAD && git bundle create - refs/heads/` + fetchProbeBranch
		p := FetchProbe(ctx, sandbox.ComposeOf(fakeExec(t, clean)), &config.Config{Workspace: ws})
		if p.Result != "FAIL" || !strings.Contains(p.Happened, "accepted") {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("no clone", func(t *testing.T) {
		p := FetchProbe(ctx, sandbox.ComposeOf(fakeExec(t, "")), &config.Config{Workspace: t.TempDir()})
		if p.Result != "FAIL" {
			t.Fatalf("%+v", p)
		}
	})
}
