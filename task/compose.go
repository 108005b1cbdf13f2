package task

// A task of agentbox run on this machine, as the course's Backend.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/progress"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// DeadlineSlack is how much earlier than its deadline an agent may end and
// still count as ended by it: the clocks of the host and of Docker's
// records agree to well within it.
const DeadlineSlack = 50 * time.Millisecond

// Compose is a task on this machine: its own compose project of the
// sandbox's generated file and the task's override. The direct workspace
// is a variant of its mounts (the override) and of its collect.
type Compose struct {
	P      *Prepared
	Prog   *progress.Progress // hears of an image build; nil: silent
	Stderr io.Writer          // hears of a stop
	// agent and egress are the containers as Agent last saw them.
	agent, egress *sandbox.ContainerState
}

// compose is docker compose on the task's project.
func (b *Compose) compose() sandbox.Compose {
	c := sandbox.ComposeOf(b.P.Compose)
	c.Runner = b.P.Docker.Runner
	return c
}

// Start builds the images if they are missing or stale and starts the
// task, egress healthy, then the agent; its agent container must be there
// then.
func (b *Compose) Start(ctx context.Context) error {
	if err := b.up(ctx); err != nil {
		return b.fail(ctx, err)
	}
	agent, err := b.P.Docker.ServiceState(ctx, b.P.Rec.Project, "agent")
	if err != nil || agent == nil {
		return fmt.Errorf("task %s: its agent container is missing: %v", b.P.Rec.Name, err)
	}
	b.agent = agent
	return nil
}

// up builds the images when needed and starts the task's project.
func (b *Compose) up(ctx context.Context) error {
	if names := generator.HeldKeyNames(b.P.Cfg, b.P.Rec.Profile); len(names) > 0 {
		env, err := b.compose().Env("up")
		if err != nil {
			return err
		}
		if err := sandbox.CheckKeyValues(names, env); err != nil {
			return fmt.Errorf("task %s: %w", b.P.Rec.Name, err)
		}
	}
	if err := b.EnsureImages(ctx); err != nil {
		return err
	}
	var errb strings.Builder
	// Not --wait: a task may be over before compose would look. depends_on
	// (condition: service_healthy) starts the agent only once the firewall
	// is loaded and answering.
	if err := b.compose().Run(ctx, nil, io.Discard, &errb, "up", "--detach", "--no-build"); err != nil {
		return fmt.Errorf("starting task %s: %v\n%s", b.P.Rec.Name, err, strings.TrimSpace(errb.String()))
	}
	return b.handKeys(ctx)
}

// handKeys hands the task's egress the model keys its gateway holds
// (sandbox.HandKeys); the agent waits for them before its command runs.
func (b *Compose) handKeys(ctx context.Context) error {
	names := generator.HeldKeyNames(b.P.Cfg, b.P.Rec.Profile)
	if len(names) == 0 {
		return nil
	}
	env, err := b.compose().Env("up")
	if err != nil {
		return err
	}
	eg, err := b.P.Docker.TaskEgress(ctx, b.P.Rec.Project, b.P.Rec.Name)
	if err != nil {
		return err
	}
	if _, err := sandbox.HandKeys(ctx, eg, names, env); err != nil {
		return fmt.Errorf("task %s: %w", b.P.Rec.Name, err)
	}
	return nil
}

// fail removes what Start made and the task's directory.
func (b *Compose) fail(ctx context.Context, err error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_ = b.compose().Run(ctx, nil, io.Discard, io.Discard, "down", "--volumes", "--timeout", "1")
	os.RemoveAll(b.P.Dir)
	return err
}

// EnsureImages builds NAME-egress and NAME-agent when either is missing or
// older than a file in .agentbox/: a task reuses the images up builds.
func (b *Compose) EnsureImages(ctx context.Context) error {
	p := b.P
	// The settings' CA first: a changed one is a newer file below. The
	// settings are read once, for the CA and the build.
	us, err := settings.LoadUser(os.Getenv)
	if err != nil {
		return err
	}
	if err := sandbox.WriteLocalCA(p.Rec.Dir, us); err != nil {
		return err
	}
	if err := sandbox.WriteLocalProgram(p.Rec.Dir, p.Files); err != nil {
		return err
	}
	newest := newestFile(filepath.Join(p.Rec.Dir, generator.OutDir))
	for _, img := range []string{p.Cfg.Name + "-egress", p.Cfg.Name + "-agent"} {
		created, err := p.Docker.ImageCreated(ctx, img)
		if err == nil && !created.Before(newest) {
			continue
		}
		if err := p.Docker.PullBases(ctx, p.Rec.Dir, b.Stderr); err != nil {
			return err
		}
		done := b.Prog.Step("building the sandbox's images (the first build takes minutes)")
		main := sandbox.ComposeWith(p.Main, us)
		main.Runner = p.Docker.Runner
		err = main.Run(ctx, nil, b.Stderr, b.Stderr, "build")
		done("the images are built", err)
		return err
	}
	return nil
}

// newestFile is when the newest file below dir was written.
func newestFile(dir string) time.Time {
	newest := time.Time{}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil && fi.ModTime().After(newest) {
				newest = fi.ModTime()
			}
		}
		return nil
	})
	return newest
}

// Follow streams the agent's output until it exits; a canceled ctx
// (Ctrl-C) stops the task. It reports whether it was stopped.
func (b *Compose) Follow(ctx context.Context, stdout, stderr io.Writer) bool {
	d, id := b.P.Docker, b.agent.ID
	lctx, stopLogs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLogs()
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		_ = d.ContainerLogs(lctx, id, []string{"--follow"}, stdout, stderr)
	}()
	done := make(chan error, 1)
	go func() { done <- d.WaitContainer(context.WithoutCancel(ctx), id) }()
	stopped := false
	select {
	case <-done:
	case <-ctx.Done():
		stopped = true
		fmt.Fprintf(stderr, "agentbox: stopping task %s\n", b.P.Rec.Name)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		_ = b.compose().Run(sctx, nil, io.Discard, io.Discard, "stop", "--timeout", "1")
		cancel()
		<-done
	}
	// docker logs ends with the container; it has 2 s to deliver the rest.
	wd := time.AfterFunc(2*time.Second, stopLogs)
	<-logsDone
	wd.Stop()
	return stopped
}

// Agent inspects the task's egress and agent containers.
func (b *Compose) Agent(ctx context.Context) (*AgentState, error) {
	eg, err := b.P.Docker.ServiceState(ctx, b.P.Rec.Project, "egress")
	if err != nil {
		return nil, err
	}
	ag, err := b.P.Docker.ServiceState(ctx, b.P.Rec.Project, "agent")
	if err != nil {
		return nil, err
	}
	b.egress, b.agent = eg, ag
	if ag == nil {
		return nil, nil
	}
	code := ag.ExitCode
	return &AgentState{Running: ag.Running, Exit: &code, Finished: ag.Finished}, nil
}

// Stop does nothing: Collect stops what still runs.
func (b *Compose) Stop(context.Context) {}

// Slack is DeadlineSlack.
func (b *Compose) Slack() time.Duration { return DeadlineSlack }

// Collect stops the task's containers, reads the egress log and takes the
// task's branch (direct: disarms and lists the project's changes).
func (b *Compose) Collect(ctx context.Context, sum *Summary, _ bool) {
	// Stopping egress (which logs its counters as it exits) and taking the
	// branch from the workspace volume are independent: at once.
	done := make(chan struct{})
	var stopErr error
	go func() {
		defer close(done)
		stopErr = b.stopAll(ctx, sum)
	}()
	if b.P.Rec.Workspace != WorkspaceDirect {
		collectBranch(ctx, b.P, sum)
		<-done
		return
	}
	// The agent writes the project itself until it is stopped.
	<-done
	if stopErr != nil {
		failDirect(sum, fmt.Errorf("stopping the task's containers: %w", stopErr))
		return
	}
	collectDirect(ctx, b.P, sum)
}

// stopAll stops the containers Agent saw running and reads the refusals of
// the egress log into sum.
func (b *Compose) stopAll(ctx context.Context, sum *Summary) error {
	// docker stop, not compose's: one call, without compose's start-up.
	var ids []string
	var err error
	for _, c := range []*sandbox.ContainerState{b.agent, b.egress} {
		if c != nil && c.Running {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) > 0 {
		err = b.P.Docker.StopContainers(ctx, ids...)
	}
	if b.egress != nil {
		log := b.P.Docker.LogStream(ctx, b.egress.ID)
		sum.ReadEgressLog(log, b.P.Cfg.CIDRPrefixes())
		log.Close()
	}
	return err
}

// Logs writes the agent container's output.
func (b *Compose) Logs(ctx context.Context, l Logs, stdout, stderr io.Writer) error {
	ag, err := b.P.Docker.ServiceState(ctx, b.P.Rec.Project, "agent")
	if err != nil || ag == nil {
		return fmt.Errorf("task %s has no container left (removed?)", b.P.Rec.Name)
	}
	return b.P.Docker.ContainerLogs(ctx, ag.ID, l.DockerArgs(), stdout, stderr)
}

// Remove removes the task's containers, network and volumes; a direct
// task never collected has its git directories disarmed first, before
// the record of which were the user's goes.
func (b *Compose) Remove(ctx context.Context) error {
	p := b.P
	if err := b.compose().Run(ctx, nil, io.Discard, io.Discard, "down", "--volumes", "--remove-orphans", "--timeout", "1"); err != nil {
		return fmt.Errorf("removing task %s: %v", p.Rec.Name, err)
	}
	// The volumes left in the task's compose project that its compose file
	// does not name (an older agentbox named them otherwise): the project
	// is the task's alone (no sandbox's name is a task's project), so its
	// volumes are the task's.
	if err := p.Docker.RemoveProjectVolumes(ctx, p.Rec.Project); err != nil {
		return fmt.Errorf("removing task %s: %v", p.Rec.Name, err)
	}
	if p.Rec.Workspace == WorkspaceDirect && p.Rec.Ended.IsZero() {
		sum := &Summary{}
		collectDirect(ctx, p, sum)
		if sum.BranchStatus != WorkspaceDirect {
			return fmt.Errorf("removing task %s: %s", p.Rec.Name, sum.BranchStatus)
		}
	}
	return nil
}
