package main

// agentbox ps, logs, stop, rm and gc: the tasks of agentbox run.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
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
func loadTasks(ctx context.Context, dir string) (*taskOptions, []*taskRecord, error) {
	o := &taskOptions{dir: dir}
	if err := o.load(ctx); err != nil {
		return nil, nil, err
	}
	recs, err := listTasks(o.cfg.Name)
	return o, recs, err
}

// prepared rebuilds run's view of a recorded task.
func (o *taskOptions) prepared(rec *taskRecord) (*prepared, error) {
	dir, err := taskDir(o.cfg.Name, rec.Name)
	if err != nil {
		return nil, err
	}
	if rec.On == onKubernetes {
		k, err := checkKubectl()
		if err != nil {
			return nil, err
		}
		return &prepared{rec: rec, cfg: o.cfg, dir: dir,
			kube: kubeTarget{kubectl: k, context: rec.KubeContext, namespace: rec.KubeNamespace}}, nil
	}
	if o.dockerErr != nil {
		return nil, o.dockerErr
	}
	return &prepared{rec: rec, cfg: o.cfg, docker: o.docker, dir: dir,
		compose: taskCompose(o.docker, o.dir, o.cfg, rec, dir)}, nil
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

// liveState is a recorded task's state as docker sees it now: a task whose
// run has not finished it (run --detach, or agentbox killed) but whose
// agent has ended is "ended" until agentbox stop collects it.
func (o *taskOptions) liveState(ctx context.Context, rec *taskRecord) (string, *int) {
	if rec.State != stateRunning {
		return rec.State, rec.Exit
	}
	p, err := o.prepared(rec)
	if err != nil {
		return "unknown (" + err.Error() + ")", nil
	}
	if rec.On == onKubernetes {
		return kubeLiveState(ctx, p)
	}
	ag, err := serviceState(ctx, o.docker, rec.Project, "agent")
	if err != nil || ag == nil {
		return "gone", nil
	}
	if ag.Running {
		return stateRunning, nil
	}
	code := ag.ExitCode
	return "ended (agentbox stop " + rec.Name + " collects it)", &code
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
		if r.State == stateRunning {
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
func taskCmd(dir *string, use, short string, act func(ctx context.Context, o *taskOptions, rec *taskRecord) error) *cobra.Command {
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
			rec, err := readTask(o.cfg.Name, args[0])
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
	_, err = readTask(c.Config.Name, name)
	return err == nil
}

// taskLogs shows a task's output: its agent's stdout and stderr.
func taskLogs(ctx context.Context, dir, name string, l logsOptions, stdout, stderr io.Writer) error {
	o := &taskOptions{dir: dir}
	if err := o.load(ctx); err != nil {
		return err
	}
	rec, err := readTask(o.cfg.Name, name)
	if err != nil {
		return err
	}
	if rec.On == onKubernetes {
		p, err := o.prepared(rec)
		if err != nil {
			return err
		}
		cmd := p.kube.command(ctx, append([]string{"logs", rec.Pod, "-c", "agent"}, l.kubeArgs()...)...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		return cmd.Run()
	}
	if o.dockerErr != nil {
		return o.dockerErr
	}
	ag, err := serviceState(ctx, o.docker, rec.Project, "agent")
	if err != nil || ag == nil {
		return fmt.Errorf("task %s has no container left (removed?)", rec.Name)
	}
	args := append([]string{"logs"}, l.args()...)
	cmd := exec.CommandContext(ctx, o.docker, append(args, ag.ID)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

func newStopCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	var asJSON bool
	c := taskCmd(dir, "stop TASK", "End a task now and collect its branch; exits 0 (the summary keeps the task's code: 130, stopped)", func(ctx context.Context, o *taskOptions, rec *taskRecord) error {
		if rec.State != stateRunning {
			return fmt.Errorf("task %s has ended already (%s)", rec.Name, rec.State)
		}
		p, err := o.prepared(rec)
		if err != nil {
			return err
		}
		var sum *taskSummary
		if rec.On == onKubernetes {
			state, _ := kubeLiveState(ctx, p)
			stopped := state == stateRunning
			if stopped {
				stopKubeAgent(p)
			}
			sum, err = finishKube(ctx, p, stopped)
		} else {
			ag, _ := serviceState(ctx, o.docker, rec.Project, "agent")
			sum, err = finish(ctx, p, ag != nil && ag.Running)
		}
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
func reportStop(sum *taskSummary, asJSON bool, stdout, stderr io.Writer) error {
	if err := printTask(sum, asJSON, stdout, stderr); err != nil {
		return err
	}
	if sum.BranchStatus == string(gitgate.StatusRefused) {
		return &exitErr{exitBranchRefused, nil}
	}
	return nil
}

// removeTask removes a task's containers, network, volumes and clone; its
// branch in the repository stays.
func removeTask(ctx context.Context, o *taskOptions, rec *taskRecord) error {
	p, err := o.prepared(rec)
	if err != nil {
		return err
	}
	if rec.On == onKubernetes {
		if err := removeKubeTask(ctx, p); err != nil {
			return err
		}
		return os.RemoveAll(filepath.Clean(p.dir))
	}
	if err := execCompose(ctx, p.compose, nil, io.Discard, io.Discard, "down", "--volumes", "--remove-orphans", "--timeout", "1"); err != nil {
		return fmt.Errorf("removing task %s: %v", rec.Name, err)
	}
	if err := removeProjectVolumes(ctx, o.docker, rec.Project); err != nil {
		return fmt.Errorf("removing task %s: %v", rec.Name, err)
	}
	if rec.Workspace == workspaceDirect && rec.Ended.IsZero() {
		// Never collected: its git directories are disarmed now, before
		// the record of which were the user's goes.
		sum := &taskSummary{}
		collectDirect(ctx, p, sum)
		if sum.BranchStatus != workspaceDirect {
			return fmt.Errorf("removing task %s: %s", rec.Name, sum.BranchStatus)
		}
	}
	return os.RemoveAll(filepath.Clean(p.dir))
}

// removeProjectVolumes removes the volumes left in a task's compose
// project that its compose file does not name (an older agentbox named
// them otherwise): the project is the task's alone (no sandbox's name is a
// task's project), so its volumes are the task's.
func removeProjectVolumes(ctx context.Context, docker, project string) error {
	out, err := exec.CommandContext(ctx, docker, "volume", "ls", "--quiet", "--filter", "label=com.docker.compose.project="+project).Output()
	if err != nil {
		return fmt.Errorf("listing the volumes of %s: %v", project, err)
	}
	vols := strings.Fields(string(out))
	if len(vols) == 0 {
		return nil
	}
	if out, err := exec.CommandContext(ctx, docker, append([]string{"volume", "rm"}, vols...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("removing the volumes of %s: %s", project, firstLine(out, err))
	}
	return nil
}

func newRmCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	c := taskCmd(dir, "rm TASK", "Remove an ended task's containers, network, volumes and clone (its branch stays)", func(ctx context.Context, o *taskOptions, rec *taskRecord) error {
		if state, _ := o.liveState(ctx, rec); state == stateRunning {
			return fmt.Errorf("task %s is running; agentbox stop %s first", rec.Name, rec.Name)
		}
		if err := removeTask(ctx, o, rec); err != nil {
			return err
		}
		if rec.Workspace == workspaceDirect {
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
				if state, _ := o.liveState(c.Context(), r); state == stateRunning {
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
func taskBranch(r *taskRecord) string {
	if r.Workspace == workspaceDirect {
		return "(direct)"
	}
	return "refs/heads/" + r.Branch
}
