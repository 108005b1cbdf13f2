package task

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/gittest"

	"github.com/agentbox-dev/agentbox/config"
)

// newProject makes the project of sandbox acme without docker, whose tasks
// on a cluster run on a fake backend (a kubectl that fails stands in for
// the one Reopen looks for), its records under a state directory of the
// test's own.
func newProject(t *testing.T) (*Project, *Fake) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	bin := t.TempDir()
	gittest.WriteFile(t, filepath.Join(bin, "kubectl"), []byte("#!/bin/sh\nexit 1\n"))
	if err := os.Chmod(filepath.Join(bin, "kubectl"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	f := NewFake(t)
	t.Cleanup(f.Done)
	p := &Project{Dir: t.TempDir(), Config: &config.Config{Name: "acme"}, DockerErr: errors.New("docker is not installed"),
		Kube: func(*Prepared, io.Writer) Backend { return f }}
	return p, f
}

// addTask records a task of acme in state, on a cluster when on is
// OnKubernetes (else on this machine), started at the n-th minute.
func addTask(t *testing.T, name, on, state string, n int) *Record {
	t.Helper()
	// Started n minutes past half an hour ago: a running task's deadline
	// (an hour on) is half an hour ahead whenever the test runs.
	started := time.Now().Add(-30 * time.Minute).Truncate(time.Minute).Add(time.Duration(n) * time.Minute)
	rec := &Record{Name: name, On: on, Branch: "agentbox/" + name, Command: []string{"make", "test"},
		Started: started, Deadline: started.Add(time.Hour), State: state, Workspace: WorkspaceClone}
	if state != StateRunning {
		rec.Exit, rec.Ended = exit(0), started.Add(time.Minute)
	}
	dir, err := Dir("acme", name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := rec.Write("acme"); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestProjectEntries: ps's entries, in the order the tasks started: a
// running task's state as its backend sees it (unknown, with the reason,
// when it cannot be reached), an ended one's as recorded; a direct task
// has no branch, a task from before profiles ran balanced.
func TestProjectEntries(t *testing.T) {
	p, f := newProject(t)
	addTask(t, "here", "", StateRunning, 3)
	addTask(t, "k1", OnKubernetes, StateRunning, 1)
	w := addTask(t, "w1", "", StateStopped, 2)
	w.Workspace, w.Branch, w.Profile = WorkspaceDirect, "", config.ProfileLocked
	if err := w.Write("acme"); err != nil {
		t.Fatal(err)
	}
	f.On("Agent", &AgentState{Exit: exit(4)})
	es, err := p.Entries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		code := "-"
		if e.ExitCode != nil {
			code = string(rune('0' + *e.ExitCode))
		}
		got = append(got, strings.Join([]string{e.Task, e.State, code, e.Branch, e.Profile}, "|"))
	}
	want := []string{
		"k1|ended (agentbox stop k1 collects it)|4|refs/heads/agentbox/k1|balanced",
		"w1|stopped|0|(direct)|locked",
		"here|unknown (docker is not installed)|-|refs/heads/agentbox/here|balanced",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestProjectRemove: rm refuses a running task and asks its backend
// nothing more; an ended one's backend removes what it left, then its
// directory goes; gc removes every task that does not run and counts them.
func TestProjectRemove(t *testing.T) {
	p, f := newProject(t)
	run := addTask(t, "k1", OnKubernetes, StateRunning, 1)
	end := addTask(t, "k2", OnKubernetes, StateExited, 2)
	f.On("Agent", &AgentState{Running: true})
	if err := p.Remove(t.Context(), run); err == nil || err.Error() != "task k1 is running; agentbox stop k1 first" {
		t.Errorf("rm of a running task: %v", err)
	}
	f.On("Remove", nil)
	if err := p.Remove(t.Context(), end); err != nil {
		t.Fatal(err)
	}
	if d, _ := Dir("acme", "k2"); mustNotExist(d) != nil {
		t.Errorf("rm left %s", d)
	}
	addTask(t, "k3", OnKubernetes, StateTimedOut, 3)
	addTask(t, "k4", OnKubernetes, StateRunning, 4)
	f.On("Agent", &AgentState{Running: true}, &AgentState{Running: false}).On("Remove", nil, nil)
	if n, err := p.RemoveEnded(t.Context()); err != nil || n != 2 {
		t.Errorf("gc removed %d, %v; want 2 (k3, and k4 whose agent ended)", n, err)
	}
	if recs, _ := p.List(); len(recs) != 1 || recs[0].Name != "k1" {
		t.Errorf("after gc: %v, want k1 alone", recs)
	}
	addTask(t, "here", "", StateExited, 5)
	f.On("Agent", &AgentState{Running: true})
	if n, err := p.RemoveEnded(t.Context()); err == nil || err.Error() != "docker is not installed" || n != 0 {
		t.Errorf("gc of a task on this machine without docker: %d, %v", n, err)
	}
}

// TestProjectStop: stop collects a running task, stopped, and records it;
// a task that ended already is refused.
func TestProjectStop(t *testing.T) {
	p, f := newProject(t)
	rec := addTask(t, "k1", OnKubernetes, StateRunning, 1)
	f.On("Agent", &AgentState{Running: true}, &AgentState{Exit: exit(143), Finished: time.Now()}).
		On("Stop", nil).On("Collect", branch("new"))
	sum, err := p.Stop(t.Context(), rec, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if sum.State != StateStopped || sum.ExitCode != ExitStopped || sum.StopExit() != 0 {
		t.Errorf("summary %+v", sum)
	}
	again, err := p.Read("k1")
	if err != nil || again.State != StateStopped {
		t.Fatalf("record %+v, %v", again, err)
	}
	if _, err := p.Stop(t.Context(), again, io.Discard); err == nil || err.Error() != "task k1 has ended already (stopped)" {
		t.Errorf("stop of a stopped task: %v", err)
	}
}

// TestProjectLogs: logs of a task come from its backend; an unknown task
// is named.
func TestProjectLogs(t *testing.T) {
	p, f := newProject(t)
	addTask(t, "k1", OnKubernetes, StateExited, 1)
	f.Stdout = "hello\n"
	f.On("Logs", nil)
	var out strings.Builder
	if err := p.Logs(t.Context(), "k1", Logs{Tail: "10"}, &out, io.Discard); err != nil || out.String() != "hello\n" {
		t.Errorf("logs %q, %v", out.String(), err)
	}
	if err := p.Logs(t.Context(), "k9", Logs{}, &out, io.Discard); err == nil || !strings.Contains(err.Error(), `no task "k9" in sandbox acme`) {
		t.Errorf("logs of no task: %v", err)
	}
}

// TestIsTask: a name is a task's when the sandbox in the directory has it
// recorded; an invalid name or a directory without agentbox.yaml has none.
func TestIsTask(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	gittest.WriteFile(t, filepath.Join(dir, config.ConfigFile), []byte("name: acme\nagent: claude\n"))
	addTask(t, "k1", OnKubernetes, StateExited, 1)
	for name, want := range map[string]bool{"k1": true, "k2": false, "../acme/k1": false, "egress": false} {
		if got := IsTask(dir, name); got != want {
			t.Errorf("IsTask(%q) = %v, want %v", name, got, want)
		}
	}
	if IsTask(t.TempDir(), "k1") {
		t.Error("a directory without agentbox.yaml has task k1")
	}
}
