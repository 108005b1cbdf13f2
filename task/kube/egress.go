package kube

// The egress container of a task on a cluster, as agentbox allow, revoke,
// policy, requests, approve, deny, blocked and connections reach it:
// kubectl exec and kubectl logs on the task's pod, where the same
// commands reach a local task's container with docker.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
)

// Egress is the egress container of a task's pod.
type Egress struct {
	K   Kubectl
	Pod string
}

// Output runs args (the program first) in the egress container and
// returns its stdout; its error is the first line of its stderr.
func (e Egress) Output(ctx context.Context, args ...string) (string, error) {
	out, err := e.K.run(ctx, nil, append([]string{"exec", e.Pod, "-c", "egress", "--"}, args...)...)
	return string(out), err
}

// Log starts the egress container's log, with the cluster's timestamps,
// from since on (to the second) when since is not zero.
func (e Egress) Log(ctx context.Context, since time.Time) (io.ReadCloser, error) {
	argv := e.K.argv("logs", e.Pod, "-c", "egress", "--timestamps")
	if !since.IsZero() {
		argv = append(argv, "--since-time="+since.UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	return sandbox.StartLog(exec.CommandContext(ctx, argv[0], argv[1:]...))
}

// clusterTask is the record of task name of the sandbox in dir, and its
// agentbox.yaml, when the task runs on a cluster; a nil record (and no
// error) when it runs on this machine or has no record (the local lookup
// then says so).
func clusterTask(dir, name string) (*config.Config, *task.Record, error) {
	cfg, err := sandbox.LoadConfig(dir)
	if err != nil {
		return nil, nil, err
	}
	rec, err := task.Read(cfg.Name, name)
	if err != nil || rec.On != task.OnKubernetes {
		return cfg, nil, nil
	}
	return cfg, rec, nil
}

// TaskEgress is the egress container of the task name of the sandbox in
// dir when the task runs on a cluster; nil (and no error) when it runs on
// this machine. kubectl is found on PATH then.
func TaskEgress(dir, name string) (*Egress, error) {
	_, rec, err := clusterTask(dir, name)
	if err != nil || rec == nil {
		return nil, err
	}
	if rec.Pod == "" {
		return nil, fmt.Errorf("task %s: its pod is not known yet (agentbox ps shows the task)", name)
	}
	path, err := task.FindKubectl()
	if err != nil {
		return nil, err
	}
	return &Egress{K: Kubectl{Path: path, Context: rec.KubeContext, Namespace: rec.KubeNamespace}, Pod: rec.Pod}, nil
}

// Runner is the egress package's Runner: it runs the egress entrypoint in
// the egress container of the sandbox in dir or of its task.
type Runner = func(ctx context.Context, dir, task string, args ...string) (string, error)

// LogSource is the egress package's LogSource.
type LogSource = func(ctx context.Context, dir, task string, since time.Time) (io.ReadCloser, error)

// EgressRunner runs the egress entrypoint in a task's pod on a cluster,
// and in local's container for the sandbox and the tasks on this machine.
func EgressRunner(local Runner) Runner {
	return func(ctx context.Context, dir, name string, args ...string) (string, error) {
		if name != "" {
			eg, err := TaskEgress(dir, name)
			if err != nil {
				return "", err
			}
			if eg != nil {
				return eg.Output(ctx, append([]string{firewall.EntrypointPath}, args...)...)
			}
		}
		return local(ctx, dir, name, args...)
	}
}

// EgressLog opens the egress log of a task's pod on a cluster, and local's
// for the sandbox and the tasks on this machine.
func EgressLog(local LogSource) LogSource {
	return func(ctx context.Context, dir, name string, since time.Time) (io.ReadCloser, error) {
		if name != "" {
			eg, err := TaskEgress(dir, name)
			if err != nil {
				return nil, err
			}
			if eg != nil {
				return eg.Log(ctx, since)
			}
		}
		return local(ctx, dir, name, since)
	}
}

// Profile is the profile a task on a cluster runs (the one its record
// holds: a task on a cluster runs the default profile), and local's answer
// for the sandbox and the tasks on this machine.
func Profile(local func(ctx context.Context, dir, task string) (string, error)) func(ctx context.Context, dir, task string) (string, error) {
	return func(ctx context.Context, dir, name string) (string, error) {
		if name != "" {
			cfg, rec, err := clusterTask(dir, name)
			if err != nil {
				return "", err
			}
			if rec != nil {
				return cmp.Or(rec.Profile, cfg.DefaultProfile, config.DefaultProfile), nil
			}
		}
		return local(ctx, dir, name)
	}
}
