package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHintDashDash: the agent's own flags after CMD without -- are not
// agentbox's; the error says to put -- before the command, with the
// command line rewritten.
func TestHintDashDash(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "claude", "-p", "fix it"}, `put -- before the command, so that its flags are its own: agentbox run -- claude -p 'fix it'`},
		{[]string{"run", "--name", "t1", "codex", "exec", "--full-auto", "x"}, `agentbox run --name t1 -- codex exec --full-auto x`},
		{[]string{"-C", "p", "run", "--timeout=5m", "claude", "-p", "x"}, `agentbox -C p run --timeout=5m -- claude -p x`},
		{[]string{"shell", "claude", "--version"}, `agentbox shell -- claude --version`},
	} {
		_, stderr, code := runDeps(t, testDeps(), tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, exitUsage, tt.want)
		}
	}
	// A flag that no command has, before any argument, gets no such hint.
	_, stderr, code := runDeps(t, testDeps(), "run", "--nmae", "x", "--", "true")
	if code != exitUsage || strings.Contains(stderr, "put --") {
		t.Errorf("run --nmae: exit %d, stderr %q", code, stderr)
	}
}

// TestHintNoSandbox: the commands that need the running sandbox say that
// none runs and how to start it, instead of docker compose's failure.
func TestHintNoSandbox(t *testing.T) {
	gitHome(t)
	dir := project(t, "agent-claude")
	git(t, dir, "init", "-q")
	commitAll(t, dir, nil)
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // the audit log of allow and revoke
	d := realDeps()
	for _, args := range [][]string{
		{"shell"},
		{"shell", "--", "id"},
		{"verify"},
		{"fetch"},
		{"allow", "example.org", "--for", "1m", "--reason", "r"},
		{"revoke", "example.org"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			log := fakeDocker(t, "ok") // no egress container runs: FAKE_PROFILE is empty
			_, stderr, code := runInDeps(t, d, dir, args...)
			want := `no sandbox runs for this project (compose project "agentbox"): start it with "agentbox up"`
			if code != exitError || !strings.Contains(stderr, want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitError, want)
			}
			if data, _ := os.ReadFile(log); strings.Contains(string(data), " exec ") {
				t.Errorf("docker compose exec ran:\n%s", data)
			}
		})
	}
}

// TestHintSubdirectory: from a directory below the project's, the error
// names the project's agentbox.yaml and -C, not agentbox init.
func TestHintSubdirectory(t *testing.T) {
	dir := project(t, "agent-claude")
	git(t, dir, "init", "-q")
	sub := filepath.Join(dir, "src", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"up"}, {"generate"}, {"run", "--", "true"}, {"explain"}} {
		_, stderr, code := runInDeps(t, testDeps(), sub, args...)
		want := `agentbox.yaml: no such file here, but ../../agentbox.yaml is: run agentbox there, or with -C ../..`
		if code != exitError || !strings.Contains(stderr, want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", args, code, stderr, exitError, want)
		}
	}
	// Above the repository's top, nothing is looked for.
	outer := filepath.Join(t.TempDir(), "outer")
	inner := filepath.Join(outer, "repo")
	os.MkdirAll(inner, 0o755)
	writeFile(t, filepath.Join(outer, "agentbox.yaml"), []byte("agent: claude\n"))
	git(t, inner, "init", "-q")
	_, stderr, _ := runInDeps(t, testDeps(), inner, "generate")
	if want := `agentbox.yaml: no such file; run "agentbox init" to create one`; !strings.Contains(stderr, want) {
		t.Errorf("in a repository of its own: stderr %q; want %q", stderr, want)
	}
}
