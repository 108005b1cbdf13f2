package generator

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
)

// workspaceScript renders the workspace entrypoint for agentbox.yaml text
// (which sets workspace.path to a directory here), with its origin (the
// read-only git database in the container) moved to origin, so that it
// runs here.
func workspaceScript(t *testing.T, yaml, origin string) string {
	t.Helper()
	cfg, _, err := config.Decode(config.ConfigFile, []byte(yaml), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(t.TempDir(), CompileOptions{Config: cfg, Lock: fakeLock(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	script := string(c.Files[WorkspaceScript])
	line := "origin=" + OriginDir + "\n"
	if !strings.Contains(script, line) {
		t.Fatalf("the script has no line %q:\n%s", line, script)
	}
	return strings.Replace(script, line, "origin="+origin+"\n", 1)
}

// gitRepo makes a repository with the files given, committed.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init", "--allow-empty")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// runScript runs the script with sh and the command "echo ran".
func runScript(t *testing.T, script string) (string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "workspace.sh")
	if err := os.WriteFile(f, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", f, "echo", "ran")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestWorkspaceScriptClones(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	src := gitRepo(t, map[string]string{"README.md": "hello\n", "src/app.go": "package app\n", ".env.example": "X=\n"})
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	script := workspaceScript(t, "agent: none\nworkspace: {path: "+ws+"}", filepath.Join(src, ".git"))
	out, err := runScript(t, script)
	if err != nil || !strings.HasSuffix(out, "ran\n") || !strings.Contains(out, "cloned the project") {
		t.Fatalf("first start: %v: %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "src/app.go")); err != nil || string(b) != "package app\n" {
		t.Fatalf("the clone lacks src/app.go: %v", err)
	}
	// The agent's own work survives a restart, even a file that matches
	// workspace.hidden: the check is for what came from the host.
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, ws, "add", "-f", ".env")
	out, err = runScript(t, script)
	if err != nil || out != "ran\n" {
		t.Fatalf("second start: %v: %q", err, out)
	}
	if _, err := os.Stat(filepath.Join(ws, ".env")); err != nil {
		t.Fatalf("the agent's file is gone after a restart: %v", err)
	}
}

func TestWorkspaceScriptRefusesHiddenFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, c := range []struct {
		name, yaml, file string
		refused          bool
	}{
		{"default .env", "agent: none", ".env", true},
		{"default .env.* at any depth", "agent: none", "config/.env.production", true},
		{"default: .env.example is a template", "agent: none", ".env.example", false},
		{"default: .env.local", "agent: none", ".env.local", true},
		{"negation then a later pattern", "agent: none\nworkspace: {hidden: [\"*.pem\", \"!test/*.pem\", test/real.pem]}", "test/real.pem", true},
		{"negation", "agent: none\nworkspace: {hidden: [\"*.pem\", \"!test/*.pem\"]}", "test/fake.pem", false},
		{"envrc is not hidden", "agent: none", ".envrc.sample", false},
		{"custom path glob", "agent: none\nworkspace: {hidden: [secrets/*.pem]}", "secrets/key.pem", true},
		{"custom: other dirs", "agent: none\nworkspace: {hidden: [secrets/*.pem]}", "docs/key.pem", false},
		{"none hidden", "agent: none\nworkspace: {hidden: []}", ".env", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := gitRepo(t, map[string]string{"README.md": "x\n", c.file: "SECRET=1\n"})
			ws := filepath.Join(t.TempDir(), "ws")
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			yaml := strings.Replace(c.yaml, "workspace: {", "workspace: {path: \""+ws+"\", ", 1)
			if yaml == c.yaml {
				yaml += "\nworkspace: {path: \"" + ws + "\"}"
			}
			out, err := runScript(t, workspaceScript(t, yaml, filepath.Join(src, ".git")))
			left, _ := os.ReadDir(ws)
			if c.refused {
				if err == nil || !strings.Contains(out, "match workspace.hidden: "+c.file) || len(left) != 0 {
					t.Fatalf("want a refusal naming %s and an empty workspace; got %v, %d entries: %s", c.file, err, len(left), out)
				}
				return
			}
			if err != nil || !strings.HasSuffix(out, "ran\n") {
				t.Fatalf("%v: %s", err, out)
			}
		})
	}
}

func TestWorkspaceScriptNoRepository(t *testing.T) {
	ws := t.TempDir()
	script := workspaceScript(t, "agent: none\nworkspace: {path: "+ws+"}", filepath.Join(t.TempDir(), "nothing"))
	out, err := runScript(t, script)
	if err == nil || !strings.Contains(out, "holds no git repository") || strings.Contains(out, "ran") {
		t.Fatalf("want a refusal: %v: %s", err, out)
	}
}

// Two projects that share a compose project name share its volumes: the
// entrypoint refuses a clone of another repository.
func TestWorkspaceScriptRefusesAnotherProjectsClone(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	a := gitRepo(t, map[string]string{"a.txt": "a\n"})
	b := gitRepo(t, map[string]string{"b.txt": "b\n"})
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := "agent: none\nworkspace: {path: " + ws + "}"
	if out, err := runScript(t, workspaceScript(t, yaml, filepath.Join(a, ".git"))); err != nil {
		t.Fatalf("first start: %v: %s", err, out)
	}
	// The same project, with history added since: fine.
	git(t, a, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "more")
	if out, err := runScript(t, workspaceScript(t, yaml, filepath.Join(a, ".git"))); err != nil || out != "ran\n" {
		t.Fatalf("same project: %v: %s", err, out)
	}
	out, err := runScript(t, workspaceScript(t, yaml, filepath.Join(b, ".git")))
	if err == nil || !strings.Contains(out, "holds a clone of another repository") || strings.Contains(out, "ran") {
		t.Fatalf("another project: want a refusal; %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); err != nil {
		t.Errorf("the refusal touched the other project's clone: %v", err)
	}
}

// TestWorkspaceScriptProfileHidden: a profile's own workspace.hidden
// (AGENTBOX_HIDDEN_EXTRA) refuses a clone made under another profile at
// every start, and keeps it; without it the same clone starts.
func TestWorkspaceScriptProfileHidden(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	src := gitRepo(t, map[string]string{"README.md": "x\n", "secrets/key.pem": "KEY\n"})
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	script := workspaceScript(t, "agent: none\nworkspace: {path: \""+ws+"\"}", filepath.Join(src, ".git"))
	if out, err := runScript(t, script); err != nil || !strings.HasSuffix(out, "ran\n") {
		t.Fatalf("first start (balanced): %v: %s", err, out)
	}
	t.Setenv(HiddenEnv, "secrets/*")
	out, err := runScript(t, script)
	if err == nil || !strings.Contains(out, "match the profile's workspace.hidden: secrets/key.pem") {
		t.Fatalf("a start under the profile: want a refusal: %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "README.md")); err != nil {
		t.Errorf("the refusal removed the clone: %v", err)
	}
	t.Setenv(HiddenEnv, "docs/*")
	if out, err := runScript(t, script); err != nil || !strings.HasSuffix(out, "ran\n") {
		t.Fatalf("another pattern: %v: %s", err, out)
	}
}
