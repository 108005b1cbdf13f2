package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// withoutMachineOutput are the commands that print nothing a program
// would parse, and why. Every other command must take --json: a command
// added later either takes it or is listed here, with its reason.
var withoutMachineOutput = map[string]string{
	"agentbox":                       "the root: prints help",
	"agentbox init":                  "writes agentbox.yaml",
	"agentbox generate":              "writes files; --check prints a unified diff",
	"agentbox validate":              "errors only, as file:line:col lines",
	"agentbox version":               "one line",
	"agentbox schema":                "prints a JSON Schema already",
	"agentbox up":                    "starts the sandbox",
	"agentbox down":                  "stops the sandbox",
	"agentbox shell":                 "a terminal in the sandbox",
	"agentbox logs":                  "the containers' own log lines",
	"agentbox revoke":                "one line; allow --list --json lists the grants",
	"agentbox approve":               "one line; requests --json lists the requests and their answers",
	"agentbox deny":                  "one line; requests --json lists the requests and their answers",
	"agentbox watch":                 "a conversation at the terminal; requests --json lists the requests",
	"agentbox policy":                "a group of commands",
	"agentbox policy add":            "edits agentbox.yaml",
	"agentbox policy remove":         "edits agentbox.yaml",
	"agentbox build":                 "docker compose build; --push prints one reference a line",
	"agentbox rm":                    "removes a task",
	"agentbox gc":                    "removes tasks",
	"agentbox ci":                    "a group of commands",
	"agentbox ci github":             "writes a workflow file",
	"agentbox completion":            "shell scripts",
	"agentbox completion bash":       "a shell script",
	"agentbox completion zsh":        "a shell script",
	"agentbox completion fish":       "a shell script",
	"agentbox completion powershell": "a shell script",
	"agentbox help":                  "help text",
}

// TestMachineOutputSpelling: --json is the one spelling of machine output.
// Every command that has machine output takes --json, a boolean flag
// that its --help shows; explain and diff also keep --format json.
func TestMachineOutputSpelling(t *testing.T) {
	t.Parallel()
	ran := false
	root := newRootCmd(testDeps(), io.Discard, io.Discard, &ran)
	root.InitDefaultHelpCmd()
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := c.CommandPath()
		seen[path] = true
		f := c.Flags().Lookup("json")
		_, exempt := withoutMachineOutput[path]
		switch {
		case f == nil && !exempt:
			t.Errorf("%s has no --json: give it one, or list it in withoutMachineOutput with the reason", path)
		case f != nil && exempt:
			t.Errorf("%s has --json but is listed in withoutMachineOutput", path)
		case f != nil:
			if f.Value.Type() != "bool" || !strings.Contains(f.Usage, "JSON") {
				t.Errorf("%s --json: type %s, help %q; want a boolean whose help says JSON", path, f.Value.Type(), f.Usage)
			}
			if !strings.Contains(c.UsageString(), "--json") {
				t.Errorf("%s --help does not show --json", path)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for path := range withoutMachineOutput {
		if !seen[path] {
			t.Errorf("withoutMachineOutput lists %q, which is no command", path)
		}
	}
}

// TestJSONSpellingsAgree: on explain and diff, --json prints what
// --format json prints, and goes with no other --format.
func TestJSONSpellingsAgree(t *testing.T) {
	dir := project(t, "full")
	git(t, dir, "init", "-q", "-b", "main")
	for _, cmd := range []string{"explain", "diff"} {
		want, stderr, code := runIn(t, dir, cmd, "--format", "json")
		if code != exitOK {
			t.Fatalf("%s --format json: exit %d: %s", cmd, code, stderr)
		}
		got, stderr, code := runIn(t, dir, cmd, "--json")
		if code != exitOK || got != want {
			t.Errorf("%s --json: exit %d, stderr %q, stdout:\n%s\nwant what --format json prints:\n%s", cmd, code, stderr, got, want)
		}
		if got, _, code := runIn(t, dir, cmd, "--json", "--format", "json"); code != exitOK || got != want {
			t.Errorf("%s --json --format json: exit %d", cmd, code)
		}
		if _, stderr, code := runIn(t, dir, cmd, "--json", "--format", "markdown"); code != exitUsage || !strings.Contains(stderr, "--json is --format json") {
			t.Errorf("%s --json --format markdown: exit %d, stderr %q; want %d", cmd, code, stderr, exitUsage)
		}
	}
}
