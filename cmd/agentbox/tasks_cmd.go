package main

// agentbox ps, logs, stop, rm and gc: the tasks of agentbox run.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
	"github.com/spf13/cobra"
)

// taskOptions are what the task commands share: the sandbox and docker.
type taskOptions struct {
	dir       string
	cfg       *config.Config
	docker    string
	dockerErr error // docker is needed only for the tasks on this machine
}

// load reads the sandbox's configuration and finds docker.
func (o *taskOptions) load(ctx context.Context) error {
	c, err := generator.Compile(o.dir, generator.CompileOptions{Until: generator.Loaded})
	if err != nil {
		return err
	}
	o.cfg = c.Config
	o.docker, o.dockerErr = checkDocker(ctx)
	return nil
}

// loadTasks loads the sandbox in dir and the records of its tasks.
func loadTasks(ctx context.Context, dir string) (*taskOptions, []*task.Record, error) {
	o := &taskOptions{dir: dir}
	if err := o.load(ctx); err != nil {
		return nil, nil, err
	}
	recs, err := task.List(o.cfg.Name)
	return o, recs, err
}

// psRow is one task in agentbox ps --json.
type psRow struct {
	Task     string    `json:"task"`
	State    string    `json:"state"`
	Started  time.Time `json:"started"`
	Deadline time.Time `json:"deadline"`
	Ended    time.Time `json:"ended,omitzero"`
	ExitCode *int      `json:"exit_code"`
	Branch   string    `json:"branch"`
	Command  []string  `json:"command"`
	Profile  string    `json:"profile"`
}

// backend is the backend of a recorded task (task.Reopen).
func (o *taskOptions) backend(rec *task.Record, stderr io.Writer) (task.Backend, *task.Prepared, error) {
	p, err := task.Reopen(o.cfg, o.dir, rec, sandbox.Docker{Path: o.docker}, o.dockerErr)
	if err != nil {
		return nil, nil, err
	}
	return backend(p, nil, stderr), p, nil
}

// liveState is a recorded task's state as its backend sees it now
// (task.Live).
func (o *taskOptions) liveState(ctx context.Context, rec *task.Record) (string, *int) {
	if rec.State != task.StateRunning {
		return rec.State, rec.Exit
	}
	b, _, err := o.backend(rec, io.Discard)
	if err != nil {
		return "unknown (" + err.Error() + ")", nil
	}
	return task.Live(ctx, rec, b)
}

func newPsCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "ps [--json]",
		Short: "List the tasks of agentbox run: state, start, deadline, exit code, branch",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o, recs, err := loadTasks(c.Context(), *dir)
			if err != nil {
				return err
			}
			rows := []psRow{}
			for _, r := range recs {
				state, exit := o.liveState(c.Context(), r)
				rows = append(rows, psRow{r.Name, state, r.Started, r.Deadline, r.Ended, exit, taskBranch(r), r.Command, cmp.Or(r.Profile, config.ProfileBalanced)})
			}
			if asJSON {
				return writeJSON(stdout, rows)
			}
			printPs(stdout, rows)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the tasks as JSON")
	return c
}

func printPs(w io.Writer, rows []psRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATE\tSTARTED\tDEADLINE\tEXIT\tBRANCH\tPROFILE")
	now := time.Now()
	for _, r := range rows {
		deadline := r.Deadline.Format("15:04:05")
		if r.State == task.StateRunning {
			deadline += fmt.Sprintf(" (%s left)", r.Deadline.Sub(now).Round(time.Second))
		}
		exit := "-"
		if r.ExitCode != nil {
			exit = fmt.Sprint(*r.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Task, esc(r.State), r.Started.Format("2006-01-02 15:04:05"), deadline, exit, r.Branch, r.Profile)
	}
	tw.Flush()
}

// taskCmd makes a command that acts on one recorded task.
func taskCmd(dir *string, use, short string, act func(ctx context.Context, o *taskOptions, rec *task.Record) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if !generator.TaskName.MatchString(args[0]) {
				return usageErrorf("invalid task name %q", args[0])
			}
			o := &taskOptions{dir: *dir}
			if err := o.load(c.Context()); err != nil {
				return err
			}
			rec, err := task.Read(o.cfg.Name, args[0])
			if err != nil {
				return err
			}
			return act(c.Context(), o, rec)
		},
	}
}

// isTask reports whether the sandbox in dir has a task called name.
func isTask(dir, name string) bool {
	if !generator.TaskName.MatchString(name) {
		return false
	}
	c, err := generator.Compile(dir, generator.CompileOptions{Until: generator.Loaded})
	if err != nil {
		return false
	}
	_, err = task.Read(c.Config.Name, name)
	return err == nil
}

// taskLogs shows a task's output: its agent's stdout and stderr.
func taskLogs(ctx context.Context, dir, name string, l task.Logs, stdout, stderr io.Writer) error {
	o := &taskOptions{dir: dir}
	if err := o.load(ctx); err != nil {
		return err
	}
	rec, err := task.Read(o.cfg.Name, name)
	if err != nil {
		return err
	}
	b, _, err := o.backend(rec, stderr)
	if err != nil {
		return err
	}
	return b.Logs(ctx, l, stdout, stderr)
}

func newStopCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	var asJSON bool
	c := taskCmd(dir, "stop TASK", "End a task now and collect its branch; exits 0 (the summary keeps the task's code: 130, stopped)", func(ctx context.Context, o *taskOptions, rec *task.Record) error {
		if rec.State != task.StateRunning {
			return fmt.Errorf("task %s has ended already (%s)", rec.Name, rec.State)
		}
		b, _, err := o.backend(rec, stderr)
		if err != nil {
			return err
		}
		c := &task.Course{Sandbox: o.cfg.Name, Rec: rec, Backend: b}
		sum, err := c.Stop(ctx)
		if err != nil {
			return err
		}
		return reportStop(sum, asJSON, stdout, stderr)
	})
	c.ValidArgsFunction = completeTaskArg(dir, true)
	c.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON on stdout")
	return c
}

// reportStop prints the summary of a task that agentbox stop ended and
// returns stop's exit code: 0, as stop did what it was asked (the task's
// own code, 130 when stop ended it, stays in the summary), or 3 when
// fetch's checks refused the task's branch, as for run.
func reportStop(sum *task.Summary, asJSON bool, stdout, stderr io.Writer) error {
	if err := printTask(sum, asJSON, stdout, stderr); err != nil {
		return err
	}
	if code := sum.StopExit(); code != 0 {
		return &exitErr{code, nil}
	}
	return nil
}

// removeTask removes a task's containers, network, volumes and clone; its
// branch in the repository stays.
func removeTask(ctx context.Context, o *taskOptions, rec *task.Record) error {
	b, p, err := o.backend(rec, io.Discard)
	if err != nil {
		return err
	}
	return task.Remove(ctx, b, p)
}

func newRmCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	c := taskCmd(dir, "rm TASK", "Remove an ended task's containers, network, volumes and clone (its branch stays)", func(ctx context.Context, o *taskOptions, rec *task.Record) error {
		if state, _ := o.liveState(ctx, rec); state == task.StateRunning {
			return fmt.Errorf("task %s is running; agentbox stop %s first", rec.Name, rec.Name)
		}
		if err := removeTask(ctx, o, rec); err != nil {
			return err
		}
		if rec.Workspace == task.WorkspaceDirect {
			fmt.Fprintf(stderr, "agentbox: task %s removed; its changes stay in the project directory\n", rec.Name)
		} else {
			fmt.Fprintf(stderr, "agentbox: task %s removed; its branch refs/heads/%s stays\n", rec.Name, rec.Branch)
		}
		return nil
	})
	c.ValidArgsFunction = completeTaskArg(dir, false)
	return c
}

func newGcCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove every ended task's containers, networks, volumes and clones (their branches stay)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o, recs, err := loadTasks(c.Context(), *dir)
			if err != nil {
				return err
			}
			n := 0
			for _, r := range recs {
				if state, _ := o.liveState(c.Context(), r); state == task.StateRunning {
					continue
				}
				if err := removeTask(c.Context(), o, r); err != nil {
					return err
				}
				n++
			}
			fmt.Fprintf(stderr, "agentbox: %d tasks removed\n", n)
			return nil
		},
	}
}

// taskBranch is what ps shows as a task's branch: none for a direct task.
func taskBranch(r *task.Record) string {
	if r.Workspace == task.WorkspaceDirect {
		return "(direct)"
	}
	return "refs/heads/" + r.Branch
}
