package task

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/sandbox"
)

// TestComposeBackendLive: what ps shows of a task the record says runs,
// from what docker says of its containers (sandbox.FakeRunner, no
// Docker): running, ended (agentbox was killed: the next stop collects
// it, with the agent's own code), or gone.
func TestComposeBackendLive(t *testing.T) {
	const (
		ps      = "ps -aq --no-trunc --filter label=com.docker.compose.project=acme-task-t1 --filter label=com.docker.compose.service="
		inspect = "inspect --format {{.State.Running}} {{.State.ExitCode}} {{.State.Status}} {{.State.FinishedAt}} "
	)
	for _, tc := range []struct {
		name  string
		agent string // docker inspect's answer; "" for no container
		state string
		code  *int
	}{
		{"running", "true 0 running 0001-01-01T00:00:00Z", StateRunning, nil},
		{"ended", "false 7 exited 2026-11-27T06:00:00Z", "ended (agentbox stop t1 collects it)", ptr(7)},
		{"gone", "", "gone", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answers := map[string]any{ps + "egress": "eg1\n", inspect + "eg1": "true 0 running 0001-01-01T00:00:00Z\n", ps + "agent": ""}
			if tc.agent != "" {
				answers[ps+"agent"] = "ag1\n"
				answers[inspect+"ag1"] = tc.agent + "\n"
			}
			f := &sandbox.FakeRunner{T: t, Answers: answers}
			rec := &Record{Name: "t1", Project: "acme-task-t1", State: StateRunning, Deadline: time.Now().Add(time.Hour)}
			b := &Compose{P: &Prepared{Rec: rec, Docker: sandbox.Docker{Path: "docker", Runner: f}}}
			state, code := Live(context.Background(), rec, b)
			if state != tc.state || (code == nil) != (tc.code == nil) || (code != nil && *code != *tc.code) {
				t.Errorf("Live = %q, %v; want %q, %v (docker ran %s)", state, code, tc.state, tc.code, strings.Join(f.Ran, "; "))
			}
		})
	}
}

func ptr(n int) *int { return &n }
