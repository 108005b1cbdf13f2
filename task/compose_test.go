package task

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/config"
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

// TestComposeCollect: Collect stops, in one docker stop, the containers
// Agent saw running, reads the refusals from egress's log, and under a
// locked profile brings no branch back (the clone is read-only): no
// collect container runs.
func TestComposeCollect(t *testing.T) {
	const (
		ps      = "ps -aq --no-trunc --filter label=com.docker.compose.project=acme-task-t1 --filter label=com.docker.compose.service="
		inspect = "inspect --format {{.State.Running}} {{.State.ExitCode}} {{.State.Status}} {{.State.FinishedAt}} "
	)
	f := &sandbox.FakeRunner{T: t, Answers: map[string]any{
		ps + "egress": "eg1\n", inspect + "eg1": "true 0 running 0001-01-01T00:00:00Z\n",
		ps + "agent": "ag1\n", inspect + "ag1": "true 0 running 0001-01-01T00:00:00Z\n",
		"stop --time 1 ag1 eg1": "",
		"logs --timestamps eg1": "dnsmasq[9]: config evil.example is NXDOMAIN\nagentbox-egress: rejected packets: dns=1 other=0\n",
	}}
	cfg := &config.Config{Name: "acme", Profiles: []config.Profile{{Name: "locked", Locked: true}}}
	rec := &Record{Name: "t1", Project: "acme-task-t1", Branch: "agentbox/t1", Profile: "locked", State: StateRunning}
	b := &Compose{P: &Prepared{Rec: rec, Cfg: cfg, Docker: sandbox.Docker{Path: "docker", Runner: f}}}
	if ag, err := b.Agent(t.Context()); err != nil || ag == nil || !ag.Running {
		t.Fatalf("Agent = %+v, %v; want running", ag, err)
	}
	sum := NewSummary(rec, false, false, ptr(0))
	b.Collect(t.Context(), sum, false)
	if !slices.Contains(f.Ran, "stop --time 1 ag1 eg1") {
		t.Errorf("docker ran %q; want one stop of both containers", f.Ran)
	}
	if len(sum.RefusedNames) != 1 || sum.RefusedNames[0].Name != "evil.example" || sum.RejectedPackets["dns"] != 1 {
		t.Errorf("refused %+v, packets %v", sum.RefusedNames, sum.RejectedPackets)
	}
	if !strings.HasPrefix(sum.BranchStatus, "none: profile locked keeps the clone read-only") {
		t.Errorf("branch status %q", sum.BranchStatus)
	}
}

// TestComposeRemove: rm takes the task's project down with its volumes,
// and removes the volumes left in the project that its file does not
// name.
func TestComposeRemove(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	const compose = "compose -f /p/.agentbox/docker-compose.yml -f /s/t1/compose.yml -p acme-task-t1 "
	f := &sandbox.FakeRunner{T: t, Answers: map[string]any{
		compose + "down --volumes --remove-orphans --timeout 1":                    "",
		"volume ls --quiet --filter label=com.docker.compose.project=acme-task-t1": "acme-task-t1_old\n",
		"volume rm acme-task-t1_old":                                               "",
	}}
	rec := &Record{Name: "t1", Project: "acme-task-t1", State: StateExited, Ended: time.Now()}
	p := &Prepared{Rec: rec, Docker: sandbox.Docker{Path: "docker", Runner: f},
		Compose: strings.Fields("docker " + compose)}
	if err := (&Compose{P: p}).Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(f.Ran) != 3 {
		t.Errorf("docker ran %q", f.Ran)
	}
}

// lockedRunner runs one command at a time: Follow waits and reads the
// logs at once, and the fake keeps its record unlocked.
type lockedRunner struct {
	mu sync.Mutex
	r  sandbox.Runner
}

func (l *lockedRunner) Run(ctx context.Context, c sandbox.Cmd) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Run(ctx, c)
}

// TestComposeFollow: the agent's output reaches the writers until it
// exits; not stopped.
func TestComposeFollow(t *testing.T) {
	f := &sandbox.FakeRunner{T: t, Answers: map[string]any{"logs --follow ag1": "hello\n", "wait ag1": "0\n"}}
	rec := &Record{Name: "t1", Project: "acme-task-t1"}
	b := &Compose{P: &Prepared{Rec: rec, Docker: sandbox.Docker{Path: "docker", Runner: &lockedRunner{r: f}}},
		agent: &sandbox.ContainerState{ID: "ag1", Running: true}}
	var out strings.Builder
	if stopped := b.Follow(t.Context(), &out, &out); stopped || out.String() != "hello\n" {
		t.Errorf("Follow = %v, output %q; want not stopped, hello", stopped, out.String())
	}
}

// TestComposeStartFails: a task whose project does not start is taken
// down, and its directory removed; the error says why.
func TestComposeStartFails(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no settings: no CA
	project, tdir := t.TempDir(), t.TempDir()
	const compose = "compose -f a.yml -f b.yml -p acme-task-t1 "
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	f := &sandbox.FakeRunner{T: t, Answers: map[string]any{
		"image inspect --format {{.Created}} acme-egress": later + "\n",
		"image inspect --format {{.Created}} acme-agent":  later + "\n",
		compose + "up --detach --no-build":                errors.New("exit status 1"),
		compose + "down --volumes --timeout 1":            "",
	}}
	p := &Prepared{Rec: &Record{Name: "t1", Project: "acme-task-t1", Dir: project}, Cfg: &config.Config{Name: "acme"}, Dir: tdir,
		Docker: sandbox.Docker{Path: "docker", Runner: f}, Compose: strings.Fields("docker " + compose)}
	err := (&Compose{P: p}).Start(t.Context())
	if err == nil || !strings.HasPrefix(err.Error(), "starting task t1: ") {
		t.Errorf("Start: %v", err)
	}
	if _, serr := os.Stat(tdir); serr == nil {
		t.Error("the task's directory is left")
	}
	if f.Ran[len(f.Ran)-1] != compose+"down --volumes --timeout 1" {
		t.Errorf("docker ran %q; want the project taken down last", f.Ran)
	}
}
