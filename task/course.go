package task

import (
	"context"
	"io"
	"time"
)

// AgentState is what a backend knows of a task's agent container.
type AgentState struct {
	Running bool
	// Exit is its exit code; nil while it runs or when it is not known.
	Exit *int
	// Finished is when it ended; zero while it runs or when not known.
	Finished time.Time
}

// Backend is where a task runs: Docker Compose on this machine (and the
// direct workspace, a variant of its mounts and collect) or a Job on a
// Kubernetes cluster. The Course drives it; a Backend holds no decision
// about how a task ended.
type Backend interface {
	// Start starts the prepared task: its firewall first, then its agent.
	// On error, what it made is removed.
	Start(ctx context.Context) error
	// Follow streams the agent's output until the agent ends; when ctx
	// is canceled first (Ctrl-C), it stops the agent and reports stopped.
	Follow(ctx context.Context, stdout, stderr io.Writer) (stopped bool)
	// Agent is the agent's state now; nil when it has no container (left).
	Agent(ctx context.Context) (*AgentState, error)
	// Stop ends the agent of a running task before it is collected
	// (agentbox stop). A backend whose Collect stops it does nothing.
	Stop(ctx context.Context)
	// Collect stops what still runs, and fills sum with the firewall's
	// refusals and the task's branch (or, direct, the project's changes),
	// timedOut saying whether the deadline ended it.
	Collect(ctx context.Context, sum *Summary, timedOut bool)
	// Slack is how much earlier than the deadline an agent may end and
	// still count as ended by it: the clocks of the host and of the
	// backend's records agree to well within it.
	Slack() time.Duration
	// Logs writes the agent's output (follow: as it comes).
	Logs(ctx context.Context, l Logs, stdout, stderr io.Writer) error
	// Remove removes what the task left running or stored on the backend
	// (containers, volumes, the Job); its directory on the host stays.
	Remove(ctx context.Context) error
}

// Logs are what a task's logs show.
type Logs struct {
	Follow bool
	Tail   string // "": all; else a number of lines
	Since  time.Time
}

// DockerArgs are the flags of docker logs and docker compose logs.
func (l Logs) DockerArgs() []string {
	var a []string
	if l.Follow {
		a = append(a, "--follow")
	}
	if l.Tail != "" {
		a = append(a, "--tail", l.Tail)
	}
	if !l.Since.IsZero() {
		a = append(a, "--since", l.Since.UTC().Format(time.RFC3339Nano))
	}
	return a
}

// KubectlArgs are the flags of kubectl logs.
func (l Logs) KubectlArgs() []string {
	var a []string
	if l.Follow {
		a = append(a, "--follow")
	}
	if l.Tail != "" {
		a = append(a, "--tail="+l.Tail)
	}
	if !l.Since.IsZero() {
		a = append(a, "--since-time="+l.Since.UTC().Format(time.RFC3339))
	}
	return a
}

// collectTimeout bounds collecting a task that run followed, after a
// Ctrl-C too.
const collectTimeout = 5 * time.Minute

// Course is one task's course over its backend: start, follow, finish
// (collect and record). Sandbox is the name of the task's sandbox, under
// which its record lives.
type Course struct {
	Sandbox string
	Rec     *Record
	Backend Backend
	Times   Times
}

// Run starts the task and, unless detach, follows it to its end and
// finishes it; the summary is nil for a detached task. A canceled ctx
// (Ctrl-C) stops the task, which is still collected.
func (c *Course) Run(ctx context.Context, detach bool, stdout, stderr io.Writer) (*Summary, error) {
	if c.Times.Prepared.IsZero() {
		c.Times.Prepared = time.Now()
	}
	if err := c.Backend.Start(ctx); err != nil {
		return nil, err
	}
	c.Times.Started = time.Now()
	if detach {
		return nil, nil
	}
	stopped := c.Backend.Follow(ctx, stdout, stderr)
	c.Times.CommandEnded = time.Now()
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), collectTimeout)
	defer cancel()
	return c.Finish(fctx, stopped)
}

// Finish collects a task whose agent has ended (or was stopped: stopped)
// and records how it ended. The deadline ended the task when its agent
// ended at the deadline or after it (the backend ends it within moments of
// it), not before: a task that ended on its own and is collected late did
// not time out.
func (c *Course) Finish(ctx context.Context, stopped bool) (*Summary, error) {
	ag, err := c.Backend.Agent(ctx)
	if err != nil {
		return nil, err
	}
	timedOut := ag != nil && !ag.Running && !ag.Finished.IsZero() &&
		!ag.Finished.Before(c.Rec.Deadline.Add(-c.Backend.Slack()))
	var exit *int
	if ag != nil {
		exit = ag.Exit
	}
	sum := NewSummary(c.Rec, timedOut, stopped, exit)
	c.Backend.Collect(ctx, sum, timedOut)
	return sum, c.end(sum)
}

// Stop ends a recorded task now (agentbox stop): a running agent is
// stopped, and the task is collected, whether it ran, ended on its own
// while no agentbox followed it (run --detach, or agentbox killed), or
// left nothing.
func (c *Course) Stop(ctx context.Context) (*Summary, error) {
	ag, _ := c.Backend.Agent(ctx)
	stopped := ag != nil && ag.Running
	if stopped {
		c.Backend.Stop(ctx)
	}
	return c.Finish(ctx, stopped)
}

// end records how the task ended, with its duration and timings.
func (c *Course) end(sum *Summary) error {
	c.Rec.State, c.Rec.Ended = sum.State, time.Now()
	c.Rec.Exit = &sum.ExitCode
	sum.DurationSeconds = c.Rec.Ended.Sub(c.Rec.Started).Round(10 * time.Millisecond).Seconds()
	c.Times.record(c.Rec, sum)
	return c.Rec.Write(c.Sandbox)
}

// Live is a recorded task's state as its backend sees it now: a task
// whose run has not finished it (run --detach, or agentbox killed) but
// whose agent has ended is "ended" until agentbox stop collects it, and
// one whose agent is not there any more is "gone".
func Live(ctx context.Context, rec *Record, b Backend) (string, *int) {
	if rec.State != StateRunning {
		return rec.State, rec.Exit
	}
	ag, err := b.Agent(ctx)
	switch {
	case err != nil || ag == nil:
		return "gone", nil
	case ag.Running:
		return StateRunning, nil
	}
	return "ended (agentbox stop " + rec.Name + " collects it)", ag.Exit
}
