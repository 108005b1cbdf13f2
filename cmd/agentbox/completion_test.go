package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/task"
)

// TestCompletion: cobra's completion command, for each shell it supports.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{
		"bash":       "# bash completion V2 for agentbox",
		"zsh":        "#compdef agentbox",
		"fish":       "# fish completion for agentbox",
		"powershell": "# powershell completion for agentbox",
	} {
		t.Run(shell, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runArgs(t, []string{"completion", shell}, &stdout, &stderr); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("stdout lacks %q:\n%.300s", want, stdout.String())
			}
		})
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}} {
		var stdout, stderr bytes.Buffer
		if code := runArgs(t, args, &stdout, &stderr); code != exitUsage || stdout.Len() != 0 {
			t.Errorf("%s: exit %d, want %d; stdout %q, stderr %q", args, code, exitUsage, stdout.String(), stderr.String())
		}
	}
}

// TestCompletionValues: the values that completion offers where there is a
// fixed set of them.
func TestCompletionValues(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"logs", ""}, []string{"agent", "egress"}},
		{[]string{"init", "--agent", ""}, []string{"claude", "codex", "copilot", "gemini", "none", "opencode"}},
		{[]string{"init", "--ide", ""}, []string{"none", "vscode"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			runArgs(t, append([]string{"__complete"}, tt.args...), &stdout, &stderr)
			var got []string
			for _, line := range strings.Split(stdout.String(), "\n") {
				if line != "" && !strings.HasPrefix(line, ":") {
					got = append(got, line)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("completes %q, want %q", got, tt.want)
			}
		})
	}
}

// completions runs cobra's __complete with args and returns the values it
// offers (its directive line left out) and the directive.
func completions(t *testing.T, args ...string) (values []string, directive string) {
	t.Helper()
	stdout, stderr, _ := runDeps(t, testDeps(), append([]string{"__complete"}, args...)...)
	for _, line := range strings.Split(stdout, "\n") {
		switch {
		case strings.HasPrefix(line, ":"):
			directive = line
		case line != "":
			values = append(values, line)
		}
	}
	if directive == "" {
		t.Fatalf("__complete %q printed no directive: %q %q", args, stdout, stderr)
	}
	return values, directive
}

// TestCompletionProfilesAndTasks: the flags and arguments that take a
// profile complete the profiles of the project's agentbox.yaml (-C
// honored); those that take a task complete the names of agentbox's task
// records (stop: the running ones). Nothing completes files there.
func TestCompletionProfilesAndTasks(t *testing.T) {
	dir := setupCase(t, filepath.Join(goldenDir, "profiles-custom"))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for i, r := range []*task.Record{
		{Name: "fix-1", State: task.StateRunning},
		{Name: "fix-2", State: task.StateExited},
		{Name: "docs", State: task.StateStopped},
	} {
		r.Started = time.Date(2026, 11, 27, 3, i, 0, 0, time.UTC)
		if err := os.MkdirAll(mustTaskDir(t, "agentbox", r.Name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := r.Write("agentbox"); err != nil {
			t.Fatal(err)
		}
	}
	// a directory that is no task's record
	if err := os.MkdirAll(mustTaskDir(t, "agentbox", "Not_A_Task"), 0o700); err != nil {
		t.Fatal(err)
	}
	profiles := "balanced lab locked open review"
	all := "docs fix-1 fix-2"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-C", dir, "up", "--profile", ""}, profiles},
		{[]string{"-C", dir, "up", "--profile", "l"}, "lab locked"},
		{[]string{"-C", dir, "run", "--profile", ""}, profiles},
		{[]string{"-C", dir, "policy", "add", "--profile", ""}, profiles},
		{[]string{"-C", dir, "policy", "remove", "--profile", ""}, profiles},
		{[]string{"-C", dir, "stop", ""}, "fix-1"},
		{[]string{"-C", dir, "stop", "fix-1", ""}, ""},
		{[]string{"-C", dir, "rm", ""}, all},
		{[]string{"-C", dir, "rm", "fix"}, "fix-1 fix-2"},
		{[]string{"-C", dir, "logs", ""}, "agent egress " + all},
		{[]string{"-C", dir, "logs", "e"}, "egress"},
		{[]string{"-C", dir, "allow", "--task", ""}, all},
		{[]string{"-C", dir, "revoke", "--task", ""}, all},
		{[]string{"-C", dir, "blocked", "--task", ""}, all},
		{[]string{"-C", t.TempDir(), "stop", ""}, ""}, // no agentbox.yaml: nothing, no error
		{[]string{"-C", t.TempDir(), "up", "--profile", ""}, ""},
	} {
		t.Run(strings.Join(tt.args[2:], " "), func(t *testing.T) {
			got, directive := completions(t, tt.args...)
			if strings.Join(got, " ") != tt.want {
				t.Errorf("completes %q, want %q", got, tt.want)
			}
			if directive != ":4" { // cobra.ShellCompDirectiveNoFileComp
				t.Errorf("directive %s, want :4 (no file completion)", directive)
			}
		})
	}
}
