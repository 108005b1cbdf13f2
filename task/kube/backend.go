package kube

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

// Backend is a task as a Job on a cluster.
type Backend struct {
	P      *task.Prepared
	K      Kubectl
	Stderr io.Writer   // hears where the task runs, what holds its pod up, and of a stop
	pod    *corev1.Pod // as Agent last saw it
	// stuckLimit: a Pod in trouble this long fails the wait (0: stuckLimit).
	stuckLimit time.Duration
}

// New is the backend of the prepared task p, on the cluster its record
// names.
func New(p *task.Prepared, stderr io.Writer) *Backend {
	return &Backend{P: p, Stderr: stderr,
		K: Kubectl{Path: p.Kubectl, Context: p.Rec.KubeContext, Namespace: p.Rec.KubeNamespace}}
}

// Start creates the task's Job and delivers its clone.
func (b *Backend) Start(ctx context.Context) error { return b.start(ctx) }

// Follow streams the agent's output until it ends.
func (b *Backend) Follow(ctx context.Context, stdout, stderr io.Writer) bool {
	return b.follow(ctx, stdout, stderr)
}

// Agent reads the task's Pod: no Pod, no agent; an agent container that
// has not terminated runs.
func (b *Backend) Agent(ctx context.Context) (*task.AgentState, error) {
	pod, err := b.getPod(ctx)
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
func (b *Backend) Stop(ctx context.Context) { b.stopAgent(ctx) }

// Slack: the Pod's records are in whole seconds.
func (b *Backend) Slack() time.Duration { return time.Second }

// Collect takes the branch from the collect container and the egress log's
// refusals, at once. The collect container is then told to end, so that
// the Job completes; a task that timed out is left to the Job's own
// deadline, and so ends DeadlineExceeded.
func (b *Backend) Collect(ctx context.Context, sum *task.Summary, timedOut bool) {
	p, pod := b.P, b.pod
	if pod == nil {
		sum.BranchStatus = "not collected: the task's pod is gone"
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if out, err := b.K.run(ctx, nil, "logs", pod.Name, "-c", "egress", "--timestamps"); err == nil {
			sum.ReadEgressLog(bytes.NewReader(out), p.Cfg.CIDRPrefixes())
		}
	}()
	script := task.BundleScript(p.Cfg.Workspace)
	if !timedOut {
		// Then the collect container ends, and with it the Pod.
		script = "trap 'touch " + generator.CollectDone + "' EXIT; " + script
	}
	task.CollectFrom(ctx, p, sum, func(ctx context.Context, stdout, stderr io.Writer) error {
		return b.K.Stream(ctx, stdout, stderr, "exec", pod.Name, "-c", "collect", "--", "sh", "-c", script, "sh", p.Rec.Name)
	})
	<-done
}

// Logs writes the agent container's output.
func (b *Backend) Logs(ctx context.Context, l task.Logs, stdout, stderr io.Writer) error {
	return b.K.Stream(ctx, stdout, stderr, append([]string{"logs", b.P.Rec.Pod, "-c", "agent"}, l.KubectlArgs()...)...)
}

// Remove deletes the task's Job (its Pod and Secret go with it).
func (b *Backend) Remove(ctx context.Context) error {
	if _, err := b.K.run(ctx, nil, "delete", "job", b.P.Rec.Job, "--ignore-not-found", "--cascade=foreground", "--timeout=60s"); err != nil {
		return fmt.Errorf("removing task %s: %w", b.P.Rec.Name, err)
	}
	return nil
}
