package main

// A task of agentbox run on a cluster, as the task course's Backend.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/task"
	corev1 "k8s.io/api/core/v1"
)

// kubeBackend is a task as a Job on a cluster.
type kubeBackend struct {
	p      *prepared
	stderr io.Writer
	pod    *corev1.Pod // as Agent last saw it
}

// Start creates the task's Job and delivers its clone.
func (b *kubeBackend) Start(ctx context.Context) error { return startKube(ctx, b.p, b.stderr) }

// Follow streams the agent's output until it ends.
func (b *kubeBackend) Follow(ctx context.Context, stdout, stderr io.Writer) bool {
	return followKube(ctx, b.p, stdout, stderr)
}

// Agent reads the task's Pod: no Pod, no agent; an agent container that
// has not terminated runs.
func (b *kubeBackend) Agent(ctx context.Context) (*task.AgentState, error) {
	pod, err := getPod(ctx, b.p)
	if err != nil {
		return nil, err
	}
	b.pod = pod
	if pod == nil {
		return nil, nil
	}
	ag := containerStatus(pod.Status.ContainerStatuses, "agent")
	if ag == nil || ag.State.Terminated == nil {
		return &task.AgentState{Running: true}, nil
	}
	code := int(ag.State.Terminated.ExitCode)
	return &task.AgentState{Exit: &code, Finished: ag.State.Terminated.FinishedAt.Time}, nil
}

// Stop ends every process of the agent.
func (b *kubeBackend) Stop(ctx context.Context) { stopKubeAgent(ctx, b.p) }

// Slack: the Pod's records are in whole seconds.
func (b *kubeBackend) Slack() time.Duration { return time.Second }

// Collect takes the branch from the collect container and the egress log's
// refusals, at once. The collect container is then told to end, so that
// the Job completes; a task that timed out is left to the Job's own
// deadline, and so ends DeadlineExceeded.
func (b *kubeBackend) Collect(ctx context.Context, sum *task.Summary, timedOut bool) {
	p, pod := b.p, b.pod
	if pod == nil {
		sum.BranchStatus = "not collected: the task's pod is gone"
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if out, err := p.kube.run(ctx, nil, "logs", pod.Name, "-c", "egress", "--timestamps"); err == nil {
			sum.RefusedNames, sum.RefusedAddresses, sum.RejectedPackets, _ = egressRefusals(bytes.NewReader(out), p.cfg.CIDRPrefixes())
		}
	}()
	script := bundleScript(p.cfg.Workspace)
	if !timedOut {
		// Then the collect container ends, and with it the Pod.
		script = "trap 'touch " + generator.CollectDone + "' EXIT; " + script
	}
	cmd := p.kube.command(ctx, "exec", pod.Name, "-c", "collect", "--", "sh", "-c", script, "sh", p.rec.Name)
	collectFrom(ctx, p, sum, cmd)
	<-done
}

// Logs writes the agent container's output.
func (b *kubeBackend) Logs(ctx context.Context, l task.Logs, stdout, stderr io.Writer) error {
	cmd := b.p.kube.command(ctx, append([]string{"logs", b.p.rec.Pod, "-c", "agent"}, kubeLogArgs(l)...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// Remove deletes the task's Job (its Pod and Secret go with it).
func (b *kubeBackend) Remove(ctx context.Context) error {
	if _, err := b.p.kube.run(ctx, nil, "delete", "job", b.p.rec.Job, "--ignore-not-found", "--cascade=foreground", "--timeout=60s"); err != nil {
		return fmt.Errorf("removing task %s: %w", b.p.rec.Name, err)
	}
	return nil
}
