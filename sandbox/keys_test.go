package sandbox

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/firewall"
)

// stdinRunner records each command line and what it read on stdin.
type stdinRunner struct {
	lines, inputs []string
}

func (r *stdinRunner) Run(_ context.Context, c Cmd) error {
	r.lines = append(r.lines, strings.Join(c.Args, " "))
	in := ""
	if c.Stdin != nil {
		b, _ := io.ReadAll(c.Stdin)
		in = string(b)
	}
	r.inputs = append(r.inputs, in)
	return nil
}

// TestHandKeys: each key the environment sets goes to egress on stdin,
// never in a command line; the names it does not set are returned; the
// last command says the keys are there.
func TestHandKeys(t *testing.T) {
	r := &stdinRunner{}
	e := Egress{Docker: Docker{Path: "docker", Runner: r}, exec: []string{"docker", "exec", "-i", "abc"}}
	const key = "sk-ant-api03-SECRET_value"
	missing, err := HandKeys(context.Background(), e, []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"},
		[]string{"ANTHROPIC_API_KEY=old", "HOME=/root", "ANTHROPIC_API_KEY=" + key, "OPENAI_API_KEY="})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(missing, " ") != "OPENAI_API_KEY" {
		t.Errorf("missing %v, want OPENAI_API_KEY", missing)
	}
	want := []string{
		"docker exec -i abc " + firewall.EntrypointPath + " set-key ANTHROPIC_API_KEY",
		"docker exec -i abc " + firewall.EntrypointPath + " keys-done",
	}
	if strings.Join(r.lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("ran:\n%s\nwant:\n%s", strings.Join(r.lines, "\n"), strings.Join(want, "\n"))
	}
	if len(r.inputs) != 2 || r.inputs[0] != key+"\n" || r.inputs[1] != "" {
		t.Errorf("stdin: %q", r.inputs)
	}
	for _, l := range r.lines {
		if strings.Contains(l, key) {
			t.Errorf("a command line holds the key: %s", l)
		}
	}

	r = &stdinRunner{}
	e.Runner = r
	_, err = HandKeys(context.Background(), e, []string{"ANTHROPIC_API_KEY"}, []string{"ANTHROPIC_API_KEY=two words"})
	if err == nil || strings.Contains(err.Error(), "two words") || len(r.lines) != 0 {
		t.Errorf("a value the gateway cannot hold: %v (ran %v), want an error without the value and nothing run", err, r.lines)
	}
	if missing, err := HandKeys(context.Background(), e, nil, nil); err != nil || missing != nil || len(r.lines) != 0 {
		t.Errorf("no keys: %v %v, ran %v", missing, err, r.lines)
	}
}
