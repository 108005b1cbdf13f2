package main

import (
	"bytes"
	"strings"
	"testing"
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
