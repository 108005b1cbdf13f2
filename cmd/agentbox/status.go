package main

// agentbox status: whether the sandbox is up, under which profile and
// since when, whether it runs the generated files, the grants in force and
// the tasks that run.

import (
	"context"
	"io"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/egress"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
	"github.com/spf13/cobra"
)

// containerInfo is what status needs of one container of a compose
// project (deps.containers).
type containerInfo = sandbox.Container

// statusView is agentbox status's report (--json: this shape, in
// docs/cli.md): the sandbox's status, its grants and its tasks.
type statusView struct {
	*sandbox.Status
	Grants      []statusGrant `json:"grants"`
	GrantErrors []string      `json:"grant_errors,omitempty"`
	Tasks       []task.Entry  `json:"tasks"` // those not collected yet: running, or ended awaiting agentbox stop
}

// statusGrant is a grant in force, of the sandbox or of a task.
type statusGrant struct {
	Task string `json:"task,omitempty"`
	egress.Row
}

func newStatusCmd(dir *string, d deps, stdout io.Writer) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status [--json]",
		Short: "Say whether the sandbox is up, its profile and since when, whether it runs the generated files, its grants and running tasks",
		Long: `Say whether the sandbox is up (egress and agent running), the profile it runs
and since when; whether the generated files are what agentbox.yaml compiles
to, and whether the running sandbox was started from them (known when agentbox
up started it); the grants of agentbox allow in force, with the time left; and
the tasks of agentbox run not collected yet. Exit 0 whatever the state; 1 when
Docker cannot be asked.`,
		Example: `  agentbox status
  agentbox status --json | jq .up`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			v, err := sandboxStatus(c.Context(), d, *dir)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(stdout, v)
			}
			return report(stdout, "status", "text", v.text(d.now()))
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return c
}

// sandboxStatus gathers the status of the sandbox in dir.
func sandboxStatus(ctx context.Context, d deps, dir string) (*statusView, error) {
	st, err := sandbox.StatusOf(ctx, dir, d.containers)
	if err != nil {
		return nil, err
	}
	v := &statusView{Status: st, Grants: []statusGrant{}, Tasks: []task.Entry{}}
	if v.Up {
		v.addGrants(ctx, d, dir, v.Sandbox, "")
	}
	recs, err := task.List(v.Sandbox)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.State != task.StateRunning {
			continue
		}
		state, exit := d.taskState(ctx, dir, r)
		v.Tasks = append(v.Tasks, task.NewEntry(r, state, exit))
		if state == task.StateRunning {
			v.addGrants(ctx, d, dir, v.Sandbox, r.Name)
		}
	}
	return v, nil
}

// addGrants adds the grants in force in the sandbox (task "") or a task;
// a failure to list them is reported beside them.
func (v *statusView) addGrants(ctx context.Context, d deps, dir, name, task string) {
	rows, err := egressProject(d, dir, name).Grants(ctx, task)
	if err != nil {
		who := "the sandbox"
		if task != "" {
			who = "task " + task
		}
		v.GrantErrors = append(v.GrantErrors, who+": "+err.Error())
		return
	}
	for _, r := range rows {
		v.Grants = append(v.Grants, statusGrant{task, r})
	}
}

// statusText is what the text template lays out.
type statusText struct {
	*statusView
	Age   string
	Match string // yes, no, or unknown (when up)
	Tasks []statusTaskText
}

type statusTaskText struct {
	task.Entry
	Left string
}

func (v *statusView) text(now time.Time) statusText {
	t := statusText{statusView: v}
	if v.Up {
		t.Age = now.Sub(v.Since).Round(time.Second).String()
		t.Match = "unknown"
		if v.Matches != nil {
			t.Match = map[bool]string{true: "yes", false: "no"}[*v.Matches]
		}
	}
	for _, r := range v.Tasks {
		left := ""
		if r.State == task.StateRunning {
			left = config.FormatTaskDuration(max(r.Deadline.Sub(now).Round(time.Second), 0))
		}
		t.Tasks = append(t.Tasks, statusTaskText{r, left})
	}
	return t
}

// dockerTaskState is deps.taskState: a recorded task's state now, as ps
// shows it.
func dockerTaskState(ctx context.Context, dir string, rec *task.Record) (string, *int) {
	p, err := openTasks(ctx, dir)
	if err != nil {
		return "unknown (" + err.Error() + ")", nil
	}
	return p.Live(ctx, rec)
}
