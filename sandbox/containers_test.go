package sandbox

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/generator"
)

// TestContainers: docker inspect's lines as Containers asks for them; a
// container without the profile label has none.
func TestContainers(t *testing.T) {
	t.Parallel()
	format := `{{.Id}}	{{index .Config.Labels "com.docker.compose.service"}}	{{.State.Running}}	{{.State.Status}}	{{.State.StartedAt}}	{{index .Config.Labels "` + generator.ProfileLabel + `"}}`
	d, _ := fake(t, map[string]any{
		"ps -aq --no-trunc --filter label=com.docker.compose.project=p": "abc\ndef\n",
		"inspect --format " + format + " abc def":                       "abc\tegress\ttrue\trunning\t2026-11-27T03:00:00.123456789Z\tlocked\ndef\tagent\tfalse\texited\t0001-01-01T00:00:00Z\t\n",
		"ps -aq --no-trunc --filter label=com.docker.compose.project=q": "",
	})
	cs, err := d.Containers(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	want := []Container{
		{ID: "abc", Service: "egress", Running: true, Status: "running", Started: time.Date(2026, 11, 27, 3, 0, 0, 123456789, time.UTC), Profile: "locked"},
		{ID: "def", Service: "agent", Status: "exited", Started: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	if !slices.Equal(cs, want) {
		t.Errorf("got %+v", cs)
	}
	if cs, err := d.Containers(context.Background(), "q"); err != nil || cs != nil {
		t.Errorf("no container: %v %v", cs, err)
	}
	if _, err := parseContainers("abc\tegress\n"); err == nil {
		t.Error("a short line: no error")
	}
}

func TestStateOf(t *testing.T) {
	t.Parallel()
	t1, t2 := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC), time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	egress := Container{ID: "e", Service: "egress", Running: true, Status: "running", Started: t1}
	agent := Container{ID: "a", Service: "agent", Running: true, Status: "running", Started: t2}
	other := Container{ID: "w", Service: "workspace-init", Status: "exited"}
	if s := StateOf([]Container{egress, agent, other}); s != (State{Up: true, Words: "up", Profile: "balanced", Since: t2, Egress: "e"}) {
		t.Errorf("up: %+v", s)
	}
	agent.Running, agent.Status = false, "exited"
	if s := StateOf([]Container{egress, agent}); s != (State{Words: "egress running, agent exited", Profile: "balanced", Egress: "e"}) {
		t.Errorf("agent exited: %+v", s)
	}
	if s := StateOf([]Container{other}); s != (State{Words: "down"}) {
		t.Errorf("down: %+v", s)
	}
}

func TestRunningProfile(t *testing.T) {
	t.Parallel()
	q := func(project string) string {
		return "ps --filter label=com.docker.compose.project=" + project + " --filter label=com.docker.compose.service=egress --format {{.ID}} {{.Label \"" + generator.ProfileLabel + "\"}}"
	}
	d, _ := fake(t, map[string]any{
		q("p"):                                "e1 locked\n",
		q(generator.TaskProject("p", "t1")):   "e2 \n",
		q(generator.TaskProject("p", "gone")): "",
		q("down"):                             "",
		q("broken"):                           errors.New("exit status 1"),
	})
	ctx := context.Background()
	for _, tt := range []struct{ project, task, want, err string }{
		{"p", "", "locked", ""},
		{"p", "t1", "balanced", ""},
		{"p", "gone", "", "task gone has no egress container running"},
		{"down", "", "", `no sandbox runs for this project (compose project "down")`},
		{"broken", "", "", "listing the egress container"},
	} {
		got, err := d.RunningProfile(ctx, tt.project, tt.task)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s %s: %q %v, want %q %q", tt.project, tt.task, got, err, tt.want, tt.err)
		}
	}
}
