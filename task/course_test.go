package task

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/gitgate"
)

// newCourse makes a course over a fake backend for a task whose deadline
// is an hour from now, its record written under a state directory of the
// test's own.
func newCourse(t *testing.T) (*Course, *Fake) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	now := time.Now()
	rec := &Record{Name: "t1", Project: "demo-task-t1", Branch: "agentbox/t1", Command: []string{"true"},
		Started: now, Deadline: now.Add(time.Hour).Truncate(time.Second), State: StateRunning}
	dir, err := Dir("demo", rec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := rec.Write("demo"); err != nil {
		t.Fatal(err)
	}
	f := NewFake(t)
	f.SlackAnswer = 50 * time.Millisecond
	t.Cleanup(f.Done)
	return &Course{Sandbox: "demo", Rec: rec, Backend: f}, f
}

func exit(n int) *int { return &n }

// branch is a Collect answer that brings a branch back with status.
func branch(status string) func(*Summary, bool) {
	return func(s *Summary, _ bool) { s.BranchStatus = status }
}

// recorded reads the task's record back from disk.
func recorded(t *testing.T) *Record {
	t.Helper()
	r, err := Read("demo", "t1")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunExited(t *testing.T) {
	c, f := newCourse(t)
	f.Stdout = "hello\n"
	f.On("Start", nil).On("Follow", false).
		On("Agent", &AgentState{Exit: exit(7), Finished: time.Now()}).On("Collect", branch("new"))
	var out strings.Builder
	sum, err := c.Run(context.Background(), false, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.State != StateExited || sum.ExitCode != 7 || sum.RunExit() != 7 || out.String() != "hello\n" {
		t.Errorf("summary %+v, output %q; want exited 7 and the agent's output", sum, out.String())
	}
	for _, k := range []string{"prepare", "start", "command", "collect"} {
		if _, ok := sum.Timings[k]; !ok {
			t.Errorf("no timing of %s: %v", k, sum.Timings)
		}
	}
	if r := recorded(t); r.State != StateExited || r.Exit == nil || *r.Exit != 7 || r.Ended.IsZero() {
		t.Errorf("record %+v; want exited 7, ended", r)
	}
	if want := []string{"Start", "Follow", "Agent", "Collect"}; strings.Join(f.Calls, " ") != strings.Join(want, " ") {
		t.Errorf("calls %v, want %v", f.Calls, want)
	}
}

// TestRunDeadline: an agent that ended at the deadline (or within the
// backend's slack before it) timed out: 124, whatever its own code.
func TestRunDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		finished time.Duration // from the deadline
		state    string
		code     int
	}{
		{"after", 300 * time.Millisecond, StateTimedOut, ExitTimedOut},
		{"within slack", -20 * time.Millisecond, StateTimedOut, ExitTimedOut},
		{"before", -time.Second, StateExited, 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newCourse(t)
			var gotTimedOut bool
			f.On("Start", nil).On("Follow", false).
				On("Agent", &AgentState{Exit: exit(143), Finished: c.Rec.Deadline.Add(tc.finished)}).
				On("Collect", func(s *Summary, timedOut bool) { gotTimedOut = timedOut; s.BranchStatus = "new" })
			sum, err := c.Run(context.Background(), false, &strings.Builder{}, &strings.Builder{})
			if err != nil {
				t.Fatal(err)
			}
			if sum.State != tc.state || sum.ExitCode != tc.code || gotTimedOut != (tc.state == StateTimedOut) {
				t.Errorf("state %q exit %d, Collect told timed out %v; want %q %d", sum.State, sum.ExitCode, gotTimedOut, tc.state, tc.code)
			}
			if r := recorded(t); r.State != tc.state {
				t.Errorf("recorded %q, want %q", r.State, tc.state)
			}
		})
	}
}

// TestRunInterrupted: Ctrl-C stops the task (Follow reports it), and the
// task is still collected, with a context that outlives the canceled one.
func TestRunInterrupted(t *testing.T) {
	c, f := newCourse(t)
	ctx, cancel := context.WithCancel(context.Background())
	var collectCtxErr error
	f.On("Start", nil).On("Follow", true).On("Agent", &AgentState{Exit: exit(137), Finished: time.Now()})
	f.On("Collect", func(s *Summary, _ bool) { s.BranchStatus = "new" })
	cancel()
	c.Backend = &ctxSpy{Fake: f, collectErr: &collectCtxErr}
	sum, err := c.Run(ctx, false, &strings.Builder{}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.State != StateStopped || sum.ExitCode != ExitStopped || collectCtxErr != nil {
		t.Errorf("state %q exit %d, collect's context %v; want stopped 130, a live context", sum.State, sum.ExitCode, collectCtxErr)
	}
}

// ctxSpy records the error of the context Collect gets.
type ctxSpy struct {
	*Fake
	collectErr *error
}

func (s *ctxSpy) Collect(ctx context.Context, sum *Summary, timedOut bool) {
	*s.collectErr = ctx.Err()
	s.Fake.Collect(ctx, sum, timedOut)
}

// TestRunDetach: a detached task is started and left running: nothing
// follows or collects it, and its record still says running.
func TestRunDetach(t *testing.T) {
	c, f := newCourse(t)
	f.On("Start", nil)
	sum, err := c.Run(context.Background(), true, &strings.Builder{}, &strings.Builder{})
	if err != nil || sum != nil {
		t.Fatalf("Run = %v, %v; want no summary, no error", sum, err)
	}
	if r := recorded(t); r.State != StateRunning {
		t.Errorf("recorded %q, want running", r.State)
	}
}

// TestRunStartFails: a task that cannot start is neither followed nor
// collected; the error is Start's.
func TestRunStartFails(t *testing.T) {
	c, f := newCourse(t)
	boom := errors.New("no image")
	f.On("Start", boom)
	if _, err := c.Run(context.Background(), false, &strings.Builder{}, &strings.Builder{}); !errors.Is(err, boom) {
		t.Fatalf("Run: %v, want %v", err, boom)
	}
}

// TestRefusedBranch: a command that exited 0 whose branch fetch refused
// makes run exit 3, and stop too.
func TestRefusedBranch(t *testing.T) {
	c, f := newCourse(t)
	f.On("Start", nil).On("Follow", false).On("Agent", &AgentState{Exit: exit(0), Finished: time.Now()})
	f.On("Collect", func(s *Summary, _ bool) {
		s.BranchStatus = string(gitgate.StatusRefused)
		s.Refusals = []gitgate.Reason{{}}
	})
	sum, err := c.Run(context.Background(), false, &strings.Builder{}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ExitCode != 0 || sum.RunExit() != ExitBranchRefused || sum.StopExit() != ExitBranchRefused {
		t.Errorf("exit %d, run %d, stop %d; want 0, 3, 3", sum.ExitCode, sum.RunExit(), sum.StopExit())
	}
	if (&Summary{ExitCode: 5, BranchStatus: string(gitgate.StatusRefused)}).RunExit() != 5 {
		t.Error("a failed command's own code gives way to the refusal")
	}
}

// TestStopRunning: agentbox stop on a running task stops its agent, then
// collects it as stopped.
func TestStopRunning(t *testing.T) {
	c, f := newCourse(t)
	f.On("Agent", &AgentState{Running: true}, &AgentState{Exit: exit(143), Finished: time.Now()})
	f.On("Stop", nil).On("Collect", branch("new"))
	sum, err := c.Stop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.State != StateStopped || sum.ExitCode != ExitStopped || sum.StopExit() != 0 || len(sum.Timings) != 0 {
		t.Errorf("summary %+v; want stopped 130, stop exits 0, no timings (run saw no phase)", sum)
	}
	if r := recorded(t); r.State != StateStopped {
		t.Errorf("recorded %q, want stopped", r.State)
	}
}

// TestCrashRecovery: agentbox was killed while it followed a task (or
// run --detach); the record says running. ps shows the task ended, not
// running, and the next agentbox stop collects it with its own exit code,
// without stopping anything.
func TestCrashRecovery(t *testing.T) {
	c, f := newCourse(t)
	ended := &AgentState{Exit: exit(2), Finished: time.Now()}
	f.On("Agent", ended)
	rec := recorded(t)
	if state, code := Live(context.Background(), rec, f); !strings.HasPrefix(state, "ended") || code == nil || *code != 2 {
		t.Errorf("Live = %q, %v; want ended, 2", state, code)
	}
	f.On("Agent", ended, ended).On("Collect", branch("new"))
	c.Rec = rec
	sum, err := c.Stop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.State != StateExited || sum.ExitCode != 2 {
		t.Errorf("summary %+v; want exited 2", sum)
	}
	if r := recorded(t); r.State != StateExited {
		t.Errorf("recorded %q, want exited", r.State)
	}
	if state, _ := Live(context.Background(), recorded(t), f); state != StateExited {
		t.Errorf("Live after collect = %q, want the record's exited (and no backend call)", state)
	}
}

// TestGone: a task whose containers were removed behind agentbox's back
// shows as gone, and stop still records it (exit unknown: 1).
func TestGone(t *testing.T) {
	c, f := newCourse(t)
	f.On("Agent", nil)
	if state, _ := Live(context.Background(), c.Rec, f); state != "gone" {
		t.Errorf("Live = %q, want gone", state)
	}
	f.On("Agent", nil, nil).On("Collect", branch("not collected: the task's pod is gone"))
	sum, err := c.Stop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.State != StateExited || sum.ExitCode != ExitError {
		t.Errorf("summary %+v; want exited 1", sum)
	}
}

// TestFakeFailsLoudly: a call the fake was not told of fails the test.
func TestFakeFailsLoudly(t *testing.T) {
	rec := &fatalRecorder{}
	f := NewFake(rec)
	func() {
		defer func() { _ = recover() }()
		f.Stop(context.Background())
	}()
	if !strings.Contains(rec.msg, "unexpected call of Stop") {
		t.Errorf("fake said %q", rec.msg)
	}
	rec.msg = ""
	f.On("Remove", nil)
	f.Done()
	if !strings.Contains(rec.msg, "never asked for") {
		t.Errorf("Done said %q", rec.msg)
	}
}

type fatalRecorder struct{ msg string }

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestRecords(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	now := time.Now()
	for i, n := range []string{"b", "a"} {
		r := &Record{Name: n, Started: now.Add(time.Duration(i) * time.Second), State: StateRunning}
		d, _ := Dir("demo", n)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := r.Write("demo"); err != nil {
			t.Fatal(err)
		}
	}
	root, _ := Root()
	if err := os.MkdirAll(filepath.Join(root, "demo", "Not_a_task"), 0o700); err != nil {
		t.Fatal(err)
	}
	rs, err := List("demo")
	if err != nil || len(rs) != 2 || rs[0].Name != "b" || rs[1].Name != "a" {
		t.Fatalf("List = %v, %v; want b, a by start", rs, err)
	}
	if _, err := Read("demo", "zzz"); err == nil || !strings.Contains(err.Error(), "agentbox ps lists them") {
		t.Errorf("Read of no task: %v", err)
	}
}
