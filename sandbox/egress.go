package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
)

// Egress is the egress container of the sandbox or of a task, as docker
// reaches it: exec runs a program in it, logs prints its log.
type Egress struct {
	Docker
	exec   []string // docker compose ... exec -T egress, or docker exec -i ID
	logs   []string // docker compose ... logs ..., or docker logs --timestamps
	target string   // the last argument of logs: the service or the container
}

// ComposeEgress is the egress service of the compose project of argv
// (`docker compose -f FILE... -p NAME`).
func ComposeEgress(argv []string) Egress {
	return Egress{Docker: Docker{Path: argv[0]},
		exec:   append(append([]string{}, argv...), "exec", "-T", "egress"),
		logs:   append(append([]string{}, argv...), "logs", "--no-color", "--no-log-prefix", "--timestamps"),
		target: "egress"}
}

// TaskEgress is the egress container of task's compose project.
func (d Docker) TaskEgress(ctx context.Context, project, task string) (Egress, error) {
	eg, err := d.ServiceState(ctx, project, "egress")
	if err != nil {
		return Egress{}, err
	}
	if eg == nil {
		return Egress{}, fmt.Errorf("task %s has no egress container (no such task, or removed: agentbox ps lists the tasks)", task)
	}
	return Egress{Docker: d, exec: []string{d.Path, "exec", "-i", eg.ID},
		logs: []string{d.Path, "logs", "--timestamps"}, target: eg.ID}, nil
}

// Output runs args (the program first) in the egress container and
// returns its stdout; its error is the first line of its stderr.
func (e Egress) Output(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	err := e.runner().Run(ctx, Cmd{Args: append(append([]string{}, e.exec...), args...), Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return "", errors.New(FirstLine(stderr.Bytes(), err))
	}
	return stdout.String(), nil
}

// Log starts the egress container's log, with Docker's timestamps, from
// since on when since is not zero (StartLog). dnsmasq logs on stderr: the
// log is both streams, as Docker keeps them.
func (e Egress) Log(ctx context.Context, since time.Time) (io.ReadCloser, error) {
	argv := append([]string{}, e.logs...)
	if !since.IsZero() {
		argv = append(argv, "--since", since.UTC().Format(time.RFC3339Nano))
	}
	return StartLog(exec.CommandContext(ctx, argv[0], append(argv[1:], e.target)...))
}

// EgressIn is the egress container of the sandbox in dir (running: it
// must run; Open), or of its task when task is not empty.
func EgressIn(ctx context.Context, dir, task string, running bool) (Egress, error) {
	if task == "" {
		p, err := Open(ctx, Want{Dir: dir, Running: running})
		if err != nil {
			return Egress{}, err
		}
		return ComposeEgress(p.Compose.Argv), nil
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		return Egress{}, err
	}
	d, err := Check(ctx)
	if err != nil {
		return Egress{}, err
	}
	return d.TaskEgress(ctx, generator.TaskProject(cfg.Name, task), task)
}

// RunEgress runs the egress entrypoint (firewall.EntrypointPath) with args
// in the running egress container of the sandbox in dir, or of its task
// when task is not empty, and returns its stdout (Egress.Output): what
// agentbox allow, revoke and policy change the egress through.
func RunEgress(ctx context.Context, dir, task string, args ...string) (string, error) {
	eg, err := EgressIn(ctx, dir, task, true)
	if err != nil {
		return "", err
	}
	return eg.Output(ctx, append([]string{firewall.EntrypointPath}, args...)...)
}

// EgressLog opens the log of the egress container of the sandbox in dir,
// or of its task when task is not empty, from since on when since is not
// zero (Egress.Log): what agentbox blocked reads. The sandbox need not
// be running.
func EgressLog(ctx context.Context, dir, task string, since time.Time) (io.ReadCloser, error) {
	eg, err := EgressIn(ctx, dir, task, false)
	if err != nil {
		return nil, err
	}
	return eg.Log(ctx, since)
}

// EgressRunner is RunEgress that finds each egress container (of a
// directory and task) once and reuses it: a command that runs the
// entrypoint several times (agentbox approve: the requests, the grant, the
// answer) opens the sandbox once. For one command's life: a sandbox
// restarted meanwhile keeps its service's name, a task's container its ID
// until it is removed.
func EgressRunner() func(ctx context.Context, dir, task string, args ...string) (string, error) {
	var mu sync.Mutex
	found := map[[2]string]Egress{}
	return func(ctx context.Context, dir, task string, args ...string) (string, error) {
		mu.Lock()
		eg, ok := found[[2]string{dir, task}]
		mu.Unlock()
		if !ok {
			var err error
			if eg, err = EgressIn(ctx, dir, task, true); err != nil {
				return "", err
			}
			mu.Lock()
			found[[2]string{dir, task}] = eg
			mu.Unlock()
		}
		return eg.Output(ctx, append([]string{firewall.EntrypointPath}, args...)...)
	}
}
