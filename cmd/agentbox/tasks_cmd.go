package main

// agentbox ps, logs, stop, rm and gc: the tasks of agentbox run.

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/task"
	"github.com/spf13/cobra"
)

// openTasks opens the sandbox in dir for its recorded tasks.
func openTasks(ctx context.Context, dir string) (*task.Project, error) {
	return task.OpenProject(ctx, dir, kubeBackend)
}

func newPsCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "ps [--json]",
		Short: "List the tasks of agentbox run: state, start, deadline, exit code, branch",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			p, err := openTasks(c.Context(), *dir)
			if err != nil {
				return err
			}
			rows, err := p.Entries(c.Context())
			if err != nil {
				return err
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

func printPs(w io.Writer, rows []task.Entry) {
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
func taskCmd(dir *string, use, short string, act func(ctx context.Context, p *task.Project, rec *task.Record) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if !generator.TaskName.MatchString(args[0]) {
				return usageErrorf("invalid task name %q", args[0])
			}
			p, err := openTasks(c.Context(), *dir)
			if err != nil {
				return err
			}
			rec, err := p.Read(args[0])
			if err != nil {
				return err
			}
			return act(c.Context(), p, rec)
		},
	}
}

// taskLogs shows a task's output: its agent's stdout and stderr.
func taskLogs(ctx context.Context, dir, name string, l task.Logs, stdout, stderr io.Writer) error {
	p, err := openTasks(ctx, dir)
	if err != nil {
		return err
	}
	return p.Logs(ctx, name, l, stdout, stderr)
}

func newStopCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	var asJSON bool
	c := taskCmd(dir, "stop TASK", "End a task now and collect its branch; exits 0 (the summary keeps the task's code: 130, stopped)", func(ctx context.Context, p *task.Project, rec *task.Record) error {
		sum, err := p.Stop(ctx, rec, stderr)
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
	return reportSummary(sum, sum.StopExit(), asJSON, stdout, stderr)
}

func newRmCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	c := taskCmd(dir, "rm TASK", "Remove an ended task's containers, network, volumes and clone (its branch stays)", func(ctx context.Context, p *task.Project, rec *task.Record) error {
		if err := p.Remove(ctx, rec); err != nil {
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
			p, err := openTasks(c.Context(), *dir)
			if err != nil {
				return err
			}
			n, err := p.RemoveEnded(c.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "agentbox: %d tasks removed\n", n)
			return nil
		},
	}
}
