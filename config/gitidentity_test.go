package config

import (
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
)

func TestGitIdentityDefaults(t *testing.T) {
	for _, tc := range []struct{ agent, name, email string }{
		{"claude", "Claude Code (agentbox)", "claude@agentbox.invalid"},
		{"codex", "Codex (agentbox)", "codex@agentbox.invalid"},
		{"copilot", "Copilot CLI (agentbox)", "copilot@agentbox.invalid"},
		{"gemini", "Gemini CLI (agentbox)", "gemini@agentbox.invalid"},
		{"opencode", "OpenCode (agentbox)", "opencode@agentbox.invalid"},
		{"none", "Agent (agentbox)", "agent@agentbox.invalid"},
	} {
		a, _ := catalog.LookupAgent(tc.agent)
		if n, e := GitIdentity(&Config{Agent: a}); n != tc.name || e != tc.email {
			t.Errorf("%s: %q <%s>, want %q <%s>", tc.agent, n, e, tc.name, tc.email)
		}
	}
	a, _ := catalog.LookupAgent("claude")
	if n, e := GitIdentity(&Config{Agent: a, GitName: "Zoë's bot"}); n != "Zoë's bot" || e != "claude@agentbox.invalid" {
		t.Errorf("git.name alone: %q <%s>", n, e)
	}
}

func TestGitFieldError(t *testing.T) {
	for s, ok := range map[string]bool{
		"Claude Code (agentbox)": true, "Zoë O'Brien": true, "jane+agent@example.com": true,
		"": false, " lead": false, "trail ": false, "a\nb": false, "a\tb": false, "a\u202eb": false, "a\u00a0b": false,
		"a\u2028b": false, "$(id)": false, "`id`": false, `a"b`: false, `a\b`: false, "<x>": false, string(make([]byte, 201)): false,
	} {
		if got := gitFieldError(s) == ""; got != ok {
			t.Errorf("gitFieldError(%+q): accepted %v, want %v", s, got, ok)
		}
	}
}
