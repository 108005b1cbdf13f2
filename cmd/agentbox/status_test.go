package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
)

// fakeRuntime answers deps.containers and deps.taskState from maps; an
// unknown project or task fails the test.
type fakeRuntime struct {
	t          *testing.T
	containers map[string][]containerInfo
	tasks      map[string]string
	err        error
}

func (f *fakeRuntime) list(_ context.Context, project string) ([]containerInfo, error) {
	if f.err != nil {
		return nil, f.err
	}
	cs, ok := f.containers[project]
	if !ok {
		f.t.Errorf("fake runtime: unexpected project %q", project)
	}
	return cs, nil
}

func (f *fakeRuntime) taskState(_ context.Context, _ string, rec *task.Record) (string, *int) {
	s, ok := f.tasks[rec.Name]
	if !ok {
		f.t.Errorf("fake runtime: unexpected task %q", rec.Name)
	}
	return s, nil
}

var statusNow = time.Date(2026, 11, 27, 3, 30, 0, 0, time.UTC)

// statusProject is a generated project (sandbox "agentbox"), its state
// under a temporary XDG_STATE_HOME, and deps with a fake egress and a
// fake runtime: the sandbox up since 03:00 under profile locked, from
// the files agentbox up recorded.
func statusProject(t *testing.T, egress map[string]fakeReply) (string, deps, *fakeRuntime) {
	t.Helper()
	dir := project(t, "agent-claude")
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	rt := &fakeRuntime{t: t, containers: map[string][]containerInfo{"agentbox": {
		{ID: "egress-id", Service: "egress", Running: true, Status: "running", Started: statusNow.Add(-30 * time.Minute), Profile: "locked"},
		{ID: "agent-id", Service: "agent", Running: true, Status: "running", Started: statusNow.Add(-29 * time.Minute), Profile: "locked"},
	}}, tasks: map[string]string{}}
	eg := &fakeEgress{t: t, replies: egress}
	d := testDeps()
	d.now = func() time.Time { return statusNow }
	d.egress = eg.run
	d.auditDir = func() (string, error) { return filepath.Join(state, "audit"), nil }
	d.containers = rt.list
	d.taskState = rt.taskState
	abs, _ := filepath.Abs(dir)
	sum, err := sandbox.FilesHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	path, _ := sandbox.UpRecordPath("agentbox")
	data, _ := json.Marshal(sandbox.UpRecord{Dir: abs, Egress: "egress-id", Files: sum})
	writeFile(t, path, data)
	return dir, d, rt
}

func addTask(t *testing.T, r *task.Record) {
	t.Helper()
	if err := os.MkdirAll(mustTaskDir(t, "agentbox", r.Name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := r.Write("agentbox"); err != nil {
		t.Fatal(err)
	}
}

func statusJSON(t *testing.T, d deps, dir string) statusView {
	t.Helper()
	stdout, stderr, code := runDeps(t, d, "-C", dir, "status", "--json")
	if code != exitOK {
		t.Fatalf("status --json: exit %d: %s", code, stderr)
	}
	var v statusView
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	return v
}

// TestStatus: the sandbox up, its profile and since when, the files it
// runs, the grants in force (the sandbox's and a running task's, with the
// audit log's reasons) and the tasks not collected yet.
func TestStatus(t *testing.T) {
	dir, d, rt := statusProject(t, map[string]fakeReply{
		": grants":      {out: "198.18.7.0/24 443 1500\n"},
		"fix-1: grants": {out: "198.18.9.9/32 22 60\n"},
	})
	exp := statusNow.Add(1500 * time.Second)
	path, _ := egressProject(d, dir, "agentbox").AuditPath()
	line, _ := json.Marshal(audit.Record{Time: statusNow.Add(-5 * time.Minute), Event: audit.Grant, Sandbox: "agentbox",
		Dest: "198.18.7.0/24", Ports: []uint16{443}, Expires: &exp, Reason: "fetch the fixtures", Result: audit.OK})
	writeFile(t, path, append(line, '\n'))
	addTask(t, &task.Record{Name: "fix-1", State: task.StateRunning, Branch: "agentbox/fix-1", Started: statusNow.Add(-10 * time.Minute),
		Deadline: statusNow.Add(35 * time.Minute), Profile: "open"})
	addTask(t, &task.Record{Name: "old", State: task.StateExited, Branch: "agentbox/old", Started: statusNow.Add(-time.Hour)})
	addTask(t, &task.Record{Name: "done", State: task.StateRunning, Branch: "agentbox/done", Started: statusNow.Add(-20 * time.Minute)})
	rt.tasks["fix-1"] = task.StateRunning
	rt.tasks["done"] = "ended (agentbox stop done collects it)"

	v := statusJSON(t, d, dir)
	abs, _ := filepath.Abs(dir)
	if !v.Up || v.State != "up" || v.Profile != "locked" || !v.Since.Equal(statusNow.Add(-29*time.Minute)) ||
		v.Sandbox != "agentbox" || v.Dir != abs || v.Files != "current" || v.Matches == nil || !*v.Matches {
		t.Errorf("status: %+v", v)
	}
	if len(v.Grants) != 2 || v.Grants[0].Dest != "198.18.7.0/24" || v.Grants[0].Reason != "fetch the fixtures" || v.Grants[0].Task != "" ||
		v.Grants[1].Task != "fix-1" || v.Grants[1].Port != 22 || v.Grants[1].SecondsLeft != 60 || len(v.GrantErrors) != 0 {
		t.Errorf("grants: %+v %q", v.Grants, v.GrantErrors)
	}
	var tasks []string
	for _, r := range v.Tasks {
		tasks = append(tasks, r.Task+" "+r.State)
	}
	if want := []string{"done ended (agentbox stop done collects it)", "fix-1 running"}; !slices.Equal(tasks, want) {
		t.Errorf("tasks %q, want %q", tasks, want)
	}

	stdout, stderr, code := runDeps(t, d, "-C", dir, "status")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"sandbox  agentbox (" + abs + ")\n",
		"state    up since 2026-11-27 03:01:00Z (29m0s ago), profile locked\n",
		"files    generated files current; the running sandbox was started from them\n",
		"grants   198.18.7.0/24 port 443, 25m left, until 2026-11-27T03:55:00Z: fetch the fixtures\n",
		"         198.18.9.9/32 port 22 (task fix-1), 1m left, until 2026-11-27T03:31:00Z: -\n",
		"tasks    done: ended (agentbox stop done collects it), refs/heads/agentbox/done, profile balanced\n",
		"         fix-1: running, 35m left, refs/heads/agentbox/fix-1, profile open\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, stdout)
		}
	}

	// A generated file changed since agentbox up: the sandbox runs older
	// files; agentbox.yaml changed: the generated files are out of date.
	f := filepath.Join(dir, ".agentbox", "egress", "rules.nft")
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, f, append(data, "# edited\n"...))
	if v := statusJSON(t, d, dir); v.Matches == nil || *v.Matches || v.Files != "out of date" {
		t.Errorf("after an edit: matches %v, files %q", v.Matches, v.Files)
	}
	stdout, _, _ = runDeps(t, d, "-C", dir, "status")
	if !strings.Contains(stdout, "files    generated files out of date; the running sandbox predates them (agentbox up applies them)\n") {
		t.Errorf("status after an edit:\n%s", stdout)
	}
	// Recreated since agentbox up (the Dev Container): not known.
	rt.containers["agentbox"][0].ID = "other-id"
	if v := statusJSON(t, d, dir); v.Matches != nil {
		t.Errorf("a sandbox up did not start: matches %v", *v.Matches)
	}
}

// TestStatusDown: no container, no grants asked for, the task records
// still read; egress alone running is not up; Docker unreachable is an
// error.
func TestStatusDown(t *testing.T) {
	dir, d, rt := statusProject(t, map[string]fakeReply{})
	rt.containers["agentbox"] = nil
	v := statusJSON(t, d, dir)
	if v.Up || v.State != "down" || v.Profile != "" || !v.Since.IsZero() || v.Matches != nil || len(v.Grants) != 0 || len(v.Tasks) != 0 {
		t.Errorf("status: %+v", v)
	}
	stdout, _, _ := runDeps(t, d, "-C", dir, "status")
	for _, want := range []string{"state    down\n", "files    generated files current\n", "grants   none\n", "tasks    none running\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, stdout)
		}
	}

	rt.containers["agentbox"] = []containerInfo{
		{ID: "egress-id", Service: "egress", Running: true, Status: "running", Started: statusNow},
		{ID: "agent-id", Service: "agent", Status: "exited"},
	}
	if v := statusJSON(t, d, dir); v.Up || v.State != "egress running, agent exited" {
		t.Errorf("status: %+v", v)
	}

	rt.err = errors.New("cannot reach the Docker daemon (is dockerd running?): no socket")
	if _, stderr, code := runDeps(t, d, "-C", dir, "status"); code != exitError || !strings.Contains(stderr, "cannot reach the Docker daemon") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestStatusGrantsFail: grants that cannot be listed are said to be not
// known, with the reason, and status still reports the rest.
func TestStatusGrantsFail(t *testing.T) {
	dir, d, _ := statusProject(t, map[string]fakeReply{": grants": {err: errors.New("no such container")}})
	v := statusJSON(t, d, dir)
	if !v.Up || len(v.GrantErrors) != 1 || !strings.Contains(v.GrantErrors[0], "the sandbox: listing the grants: no such container") {
		t.Errorf("status: %+v", v)
	}
	stdout, _, _ := runDeps(t, d, "-C", dir, "status")
	if !strings.Contains(stdout, "grants   not known\n         cannot list the grants of the sandbox: listing the grants: no such container\n") {
		t.Errorf("status:\n%s", stdout)
	}
}

// TestStatusEscapes: what the agent controls (a grant's reason, a task's
// state as docker or the cluster reports it, a profile label) reaches the
// terminal escaped, and --json escapes C1 and bidirectional runes.
func TestStatusEscapes(t *testing.T) {
	dir, d, rt := statusProject(t, map[string]fakeReply{": grants": {out: "198.18.7.0/24 443 600\n"}})
	exp := statusNow.Add(600 * time.Second)
	path, _ := egressProject(d, dir, "agentbox").AuditPath()
	line, _ := json.Marshal(audit.Record{Time: statusNow, Event: audit.Grant, Sandbox: "agentbox",
		Dest: "198.18.7.0/24", Ports: []uint16{443}, Expires: &exp, Reason: "x\x1b]0;pwned\x07\u202e\u009b", Result: audit.OK})
	writeFile(t, path, append(line, '\n'))
	rt.containers["agentbox"][0].Profile = "lo\x1b[2Jcked"
	addTask(t, &task.Record{Name: "fix-1", State: task.StateRunning, Branch: "agentbox/\x1b[31mred", Started: statusNow})
	rt.tasks["fix-1"] = "unknown (kubectl: \x1b[2J\u009b)"
	for _, args := range [][]string{{"status"}, {"status", "--json"}} {
		stdout, stderr, code := runDeps(t, d, append([]string{"-C", dir}, args...)...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, bad := range []string{"\x1b", "\x07", "\u202e", "\u009b"} {
			if strings.Contains(stdout, bad) {
				t.Errorf("%s prints %q raw:\n%s", args, bad, stdout)
			}
		}
		if !strings.Contains(stdout, `\x1b`) && !strings.Contains(stdout, `\u001b`) {
			t.Errorf("%s: no escaped ESC:\n%s", args, stdout)
		}
	}
}

// TestStatusJSONShapeDocumented: status --json has the shape docs/cli.md
// documents.
func TestStatusJSONShapeDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	dir, d, rt := statusProject(t, map[string]fakeReply{": grants": {out: "198.18.7.0/24 443 600\n"},
		"fix-1: grants": {out: "198.18.7.9/32 22 60\n"}, "fix-2: grants": {err: fmt.Errorf("gone")}})
	for _, n := range []string{"fix-1", "fix-2"} {
		addTask(t, &task.Record{Name: n, State: task.StateRunning, Branch: "agentbox/" + n, Command: []string{"true"}, Started: statusNow})
		rt.tasks[n] = task.StateRunning
	}
	stdout, _, _ := runDeps(t, d, "-C", dir, "status", "--json")
	var v any
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	shape(v, "", got)
	if want := documentedShape(t, string(readme), "status"); !slices.Equal(want, sortedKeys(got)) {
		t.Errorf("docs/cli.md's status JSON shape:\n%s\nthe output's:\n%s", strings.Join(want, "\n"), strings.Join(sortedKeys(got), "\n"))
	}
}
