package main

// A task of agentbox run on this machine, as the task course's Backend.

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/agentbox-dev/agentbox/internal/progress"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
)

// composeBackend is a task on this machine: its own compose project of
// the sandbox's generated file and the task's override. The direct
// workspace is a variant of its mounts (the override) and of its collect.
type composeBackend struct {
	p      *prepared
	docker sandbox.Docker
	prog   *progress.Progress // hears of an image build
	stderr io.Writer
	// agent and egress are the containers as Agent last saw them.
	agent, egress *sandbox.ContainerState
}

// Start builds the images if they are missing or stale and starts the
// task; its agent container must be there then.
func (b *composeBackend) Start(ctx context.Context) error {
	if err := start(ctx, b.p, b.prog, b.stderr); err != nil {
		return err
	}
	agent, err := b.docker.ServiceState(ctx, b.p.rec.Project, "agent")
	if err != nil || agent == nil {
		return fmt.Errorf("task %s: its agent container is missing: %v", b.p.rec.Name, err)
	}
	b.agent = agent
	return nil
}

// Follow streams the agent's output until it exits.
func (b *composeBackend) Follow(ctx context.Context, stdout, stderr io.Writer) bool {
	return follow(ctx, b.p, b.agent.ID, stdout, stderr)
}

// Agent inspects the task's egress and agent containers.
func (b *composeBackend) Agent(ctx context.Context) (*task.AgentState, error) {
	eg, err := b.docker.ServiceState(ctx, b.p.rec.Project, "egress")
	if err != nil {
		return nil, err
	}
	ag, err := b.docker.ServiceState(ctx, b.p.rec.Project, "agent")
	if err != nil {
		return nil, err
	}
	b.egress, b.agent = eg, ag
	if ag == nil {
		return nil, nil
	}
	code := ag.ExitCode
	return &task.AgentState{Running: ag.Running, Exit: &code, Finished: ag.Finished}, nil
}

// Stop does nothing: Collect stops what still runs.
func (b *composeBackend) Stop(context.Context) {}

// Slack is deadlineSlack.
func (b *composeBackend) Slack() time.Duration { return deadlineSlack }

// Collect stops the task's containers, reads the egress log and takes the
// task's branch (direct: disarms and lists the project's changes).
func (b *composeBackend) Collect(ctx context.Context, sum *task.Summary, _ bool) {
	p := b.p
	// Stopping egress (which logs its counters as it exits) and taking the
	// branch from the workspace volume are independent: at once.
	done := make(chan struct{})
	var stopErr error
	go func() {
		defer close(done)
		stopErr = b.stopAll(ctx, sum)
	}()
	if p.rec.Workspace == task.WorkspaceDirect {
		// The agent writes the project itself until it is stopped.
		<-done
		if stopErr != nil {
			failDirect(sum, fmt.Errorf("stopping the task's containers: %w", stopErr))
		} else {
			collectDirect(ctx, p, sum)
		}
	} else {
		collectBranch(ctx, p, sum)
		<-done
	}
}

// stopAll stops the containers Agent saw running and reads the refusals of
// the egress log into sum.
func (b *composeBackend) stopAll(ctx context.Context, sum *task.Summary) error {
	// docker stop, not compose's: one call, without compose's start-up.
	var ids []string
	var err error
	for _, c := range []*sandbox.ContainerState{b.agent, b.egress} {
		if c != nil && c.Running {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) > 0 {
		err = exec.CommandContext(ctx, b.p.docker, append([]string{"stop", "--time", "1"}, ids...)...).Run()
	}
	if b.egress != nil {
		if log, lerr := sandbox.StartLog(exec.CommandContext(ctx, b.p.docker, "logs", "--timestamps", b.egress.ID)); lerr == nil {
			sum.RefusedNames, sum.RefusedAddresses, sum.RejectedPackets, _ = egressRefusals(log, b.p.cfg.CIDRPrefixes())
			log.Close()
		}
	}
	return err
}

// Logs writes the agent container's output.
func (b *composeBackend) Logs(ctx context.Context, l task.Logs, stdout, stderr io.Writer) error {
	ag, err := b.docker.ServiceState(ctx, b.p.rec.Project, "agent")
	if err != nil || ag == nil {
		return fmt.Errorf("task %s has no container left (removed?)", b.p.rec.Name)
	}
	args := append([]string{"logs"}, dockerLogArgs(l)...)
	cmd := exec.CommandContext(ctx, b.p.docker, append(args, ag.ID)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// Remove removes the task's containers, network and volumes; a direct
// task never collected has its git directories disarmed first, before
// the record of which were the user's goes.
func (b *composeBackend) Remove(ctx context.Context) error {
	p := b.p
	if err := execCompose(ctx, p.compose, nil, io.Discard, io.Discard, "down", "--volumes", "--remove-orphans", "--timeout", "1"); err != nil {
		return fmt.Errorf("removing task %s: %v", p.rec.Name, err)
	}
	// The volumes left in the task's compose project that its compose file
	// does not name (an older agentbox named them otherwise): the project
	// is the task's alone (no sandbox's name is a task's project), so its
	// volumes are the task's.
	if err := b.docker.RemoveProjectVolumes(ctx, p.rec.Project); err != nil {
		return fmt.Errorf("removing task %s: %v", p.rec.Name, err)
	}
	if p.rec.Workspace == task.WorkspaceDirect && p.rec.Ended.IsZero() {
		sum := &task.Summary{}
		collectDirect(ctx, p, sum)
		if sum.BranchStatus != task.WorkspaceDirect {
			return fmt.Errorf("removing task %s: %s", p.rec.Name, sum.BranchStatus)
		}
	}
	return nil
}
