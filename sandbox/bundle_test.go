package sandbox

import (
	"bytes"
	"errors"
	"strings"
	"testing"
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
