package sandbox

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
)

func TestBundle(t *testing.T) {
	const line = "compose -p p exec -T agent git -C /workspace bundle create - --branches"
	f := &FakeRunner{T: t, Answers: map[string]any{line: "# v2 git bundle\n"}}
	c := Compose{Docker: Docker{Path: "docker", Runner: f}, Argv: []string{"docker", "compose", "-p", "p"},
		Env: func(string) ([]string, error) { return nil, nil }}
	var out bytes.Buffer
	if err := c.Bundle(t.Context(), "/workspace", &out); err != nil || out.String() != "# v2 git bundle\n" {
		t.Errorf("bundle %q, %v", out.String(), err)
	}
	f.Answers[line] = errors.New("exit status 1")
	if err := c.Bundle(t.Context(), "/workspace", &out); err == nil || !strings.Contains(err.Error(), "is the sandbox up?") {
		t.Errorf("a failed exec: %v", err)
	}
}

// TestFetchConfig: fetch checks the agent's branches against the
// top-level workspace.readonly and the running profile's; the project's
// own configuration is not changed.
func TestFetchConfig(t *testing.T) {
	cfg := &config.Config{ReadOnly: []string{"docs"}, Profiles: []config.Profile{
		{Name: "review", ReadOnly: []string{"ci"}},
		{Name: "balanced"},
	}}
	for _, tt := range []struct {
		profile string
		want    []string
	}{
		{"review", []string{"docs", "ci"}},
		{"balanced", []string{"docs"}},
		{"gone", []string{"docs"}},
	} {
		p := &Project{Config: cfg, Profile: tt.profile}
		if got := p.FetchConfig().ReadOnly; !slices.Equal(got, tt.want) {
			t.Errorf("profile %s: readonly %q, want %q", tt.profile, got, tt.want)
		}
	}
	if !slices.Equal(cfg.ReadOnly, []string{"docs"}) {
		t.Errorf("the project's configuration changed: %q", cfg.ReadOnly)
	}
}
