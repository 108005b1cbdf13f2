package task

// The recorded tasks of one sandbox, as agentbox ps, logs, stop, rm and gc
// (and status) find them: each one's backend and its live state.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/progress"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// NewKube makes the Kubernetes backend of a task (task/kube's New, which
// its caller passes in: task/kube imports task).
type NewKube func(p *Prepared, stderr io.Writer) Backend

// BackendOf is p's backend: its Job on a cluster (kube), or its compose
// project on this machine (prog hears of an image build; it may be nil).
func BackendOf(p *Prepared, kube NewKube, prog *progress.Progress, stderr io.Writer) Backend {
	if p.Rec.On == OnKubernetes {
		return kube(p, stderr)
	}
	return &Compose{P: p, Prog: prog, Stderr: stderr}
}

// Project is the sandbox in a project directory as its recorded tasks
// need it: its configuration, the docker its tasks on this machine run
// with, and the maker of the backend of its tasks on a cluster.
type Project struct {
	Dir    string
	Config *config.Config
	Docker sandbox.Docker
	// DockerErr is why there is no docker: only the tasks on this machine
	// need it.
	DockerErr error
	Kube      NewKube
}

// OpenProject reads the configuration of the sandbox in dir (loaded, not
// compiled) and looks for docker (sandbox.Check).
func OpenProject(ctx context.Context, dir string, kube NewKube) (*Project, error) {
	c, err := generator.Compile(dir, generator.CompileOptions{Until: generator.Loaded})
	if err != nil {
		return nil, err
	}
	p := &Project{Dir: dir, Config: c.Config, Kube: kube}
	p.Docker, p.DockerErr = sandbox.Check(ctx)
	return p, nil
}

// IsTask reports whether the sandbox in dir has a task called name.
func IsTask(dir, name string) bool {
	if !generator.TaskName.MatchString(name) {
		return false
	}
	c, err := generator.Compile(dir, generator.CompileOptions{Until: generator.Loaded})
	if err != nil {
		return false
	}
	_, err = Read(c.Config.Name, name)
	return err == nil
}

// List is the records of the project's tasks (List).
func (p *Project) List() ([]*Record, error) { return List(p.Config.Name) }

// Read is the record of the project's task name (Read).
func (p *Project) Read(name string) (*Record, error) { return Read(p.Config.Name, name) }

// Backend is the backend of a recorded task, reopened (Reopen); its
// progress lines go to stderr.
func (p *Project) Backend(rec *Record, stderr io.Writer) (Backend, *Prepared, error) {
	pr, err := Reopen(p.Config, p.Dir, rec, p.Docker, p.DockerErr)
	if err != nil {
		return nil, nil, err
	}
	return BackendOf(pr, p.Kube, nil, stderr), pr, nil
}

// Live is a recorded task's state as its backend sees it now (Live): one
// whose backend cannot be reached is "unknown (why)".
func (p *Project) Live(ctx context.Context, rec *Record) (string, *int) {
	if rec.State != StateRunning {
		return rec.State, rec.Exit
	}
	b, _, err := p.Backend(rec, io.Discard)
	if err != nil {
		return "unknown (" + err.Error() + ")", nil
	}
	return Live(ctx, rec, b)
}

// Logs writes the output of the task name, its agent's stdout and
// stderr.
func (p *Project) Logs(ctx context.Context, name string, l Logs, stdout, stderr io.Writer) error {
	rec, err := p.Read(name)
	if err != nil {
		return err
	}
	b, _, err := p.Backend(rec, stderr)
	if err != nil {
		return err
	}
	return b.Logs(ctx, l, stdout, stderr)
}

// Stop ends a running task now and collects it (Course.Stop).
func (p *Project) Stop(ctx context.Context, rec *Record, stderr io.Writer) (*Summary, error) {
	if rec.State != StateRunning {
		return nil, fmt.Errorf("task %s has ended already (%s)", rec.Name, rec.State)
	}
	b, _, err := p.Backend(rec, stderr)
	if err != nil {
		return nil, err
	}
	c := &Course{Sandbox: p.Config.Name, Rec: rec, Backend: b}
	return c.Stop(ctx)
}

// Remove removes an ended task's containers, network, volumes and clone
// (Remove); its branch in the repository stays. A running task is
// refused.
func (p *Project) Remove(ctx context.Context, rec *Record) error {
	if state, _ := p.Live(ctx, rec); state == StateRunning {
		return fmt.Errorf("task %s is running; agentbox stop %s first", rec.Name, rec.Name)
	}
	return p.remove(ctx, rec)
}

// remove removes a task (Remove), running or not.
func (p *Project) remove(ctx context.Context, rec *Record) error {
	b, pr, err := p.Backend(rec, io.Discard)
	if err != nil {
		return err
	}
	return Remove(ctx, b, pr)
}

// RemoveEnded removes every task that does not run (Remove) and returns
// how many; it stops at the first that cannot be removed.
func (p *Project) RemoveEnded(ctx context.Context) (int, error) {
	recs, err := p.List()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		if state, _ := p.Live(ctx, r); state == StateRunning {
			continue
		}
		if err := p.remove(ctx, r); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Entry is one task as agentbox ps and status list it (--json: this
// shape).
type Entry struct {
	Task     string    `json:"task"`
	State    string    `json:"state"`
	Started  time.Time `json:"started"`
	Deadline time.Time `json:"deadline"`
	Ended    time.Time `json:"ended,omitzero"`
	ExitCode *int      `json:"exit_code"`
	Branch   string    `json:"branch"` // (direct) for a direct task
	Command  []string  `json:"command"`
	Profile  string    `json:"profile"`
}

// NewEntry is the entry of rec's task, whose state and exit code are
// state and exit as its backend sees them (Project.Live).
func NewEntry(rec *Record, state string, exit *int) Entry {
	branch := "refs/heads/" + rec.Branch
	if rec.Workspace == WorkspaceDirect {
		branch = "(direct)"
	}
	return Entry{rec.Name, state, rec.Started, rec.Deadline, rec.Ended, exit, branch, rec.Command,
		cmp.Or(rec.Profile, config.ProfileBalanced)}
}

// Entries are the entries of the project's tasks, their states live.
func (p *Project) Entries(ctx context.Context) ([]Entry, error) {
	recs, err := p.List()
	if err != nil {
		return nil, err
	}
	es := []Entry{}
	for _, r := range recs {
		state, exit := p.Live(ctx, r)
		es = append(es, NewEntry(r, state, exit))
	}
	return es, nil
}
