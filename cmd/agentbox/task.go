package main

// The tasks of agentbox run: where each one's state lives on the host, and
// how to find its containers.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/atomicfile"
)

// taskRecord is a task's record on the host (task.json in its directory):
// what run started and, once it ended, how.
type taskRecord struct {
	Name      string `json:"name"`
	Project   string `json:"project"` // the task's compose project
	Dir       string `json:"dir"`     // the project directory
	Ref       string `json:"ref"`
	Base      string `json:"base"`                // the commit the branch starts from
	Branch    string `json:"branch"`              // empty for a direct task
	Workspace string `json:"workspace,omitempty"` // direct, or the clone
	// A task on a cluster (run --on kubernetes): where, and its Job and Pod.
	On            string    `json:"on,omitempty"`
	KubeContext   string    `json:"kube_context,omitempty"`
	KubeNamespace string    `json:"kube_namespace,omitempty"`
	Job           string    `json:"job,omitempty"`
	Pod           string    `json:"pod,omitempty"`
	Command       []string  `json:"command"`
	Started       time.Time `json:"started"`
	Deadline      time.Time `json:"deadline"`
	Ended         time.Time `json:"ended,omitzero"`
	State         string    `json:"state"` // running, exited, timed out, stopped
	Exit          *int      `json:"exit_code,omitempty"`
	Profile       string    `json:"profile,omitempty"` // "": the default (a task from before profiles: balanced)
}

// Task states.
const (
	stateRunning  = "running"
	stateExited   = "exited"
	stateTimedOut = "timed out"
	stateStopped  = "stopped"
)

// stateDir is agentbox's directory sub on the host, outside every project
// and mounted into no sandbox: $XDG_STATE_HOME/agentbox/SUB, else
// ~/.local/state/agentbox/SUB.
func stateDir(sub string) (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "agentbox", sub), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding agentbox's state directory (%s): %w", sub, err)
	}
	return filepath.Join(home, ".local", "state", "agentbox", sub), nil
}

// tasksRoot is where the tasks of every sandbox keep their clones and
// records.
func tasksRoot() (string, error) { return stateDir("tasks") }

// taskDir is the directory of task name of the sandbox project.
func taskDir(project, name string) (string, error) {
	root, err := tasksRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, project, name), nil
}

func readTask(project, name string) (*taskRecord, error) {
	dir, err := taskDir(project, name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "task.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no task %q in sandbox %s (agentbox ps lists them)", name, project)
	}
	if err != nil {
		return nil, err
	}
	var t taskRecord
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("reading task %q: %w", name, err)
	}
	return &t, nil
}

func (t *taskRecord) write(project string) error {
	dir, err := taskDir(project, t.Name)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	_, err = atomicfile.WriteFile(filepath.Join(dir, "task.json"), append(data, '\n'), 0o600)
	return err
}

// listTasks returns the records of the sandbox's tasks, by start time.
func listTasks(project string) ([]*taskRecord, error) {
	root, err := tasksRoot()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(root, project))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*taskRecord
	for _, e := range entries {
		if !e.IsDir() || !generator.TaskName.MatchString(e.Name()) {
			continue
		}
		t, err := readTask(project, e.Name())
		if err != nil {
			continue // a task being created or removed
		}
		out = append(out, t)
	}
	sortTasks(out)
	return out, nil
}

func sortTasks(ts []*taskRecord) {
	slices.SortFunc(ts, func(a, b *taskRecord) int { return a.Started.Compare(b.Started) })
}

// taskCompose is docker compose on a task's project: its profile's
// generated file and the task's override.
func taskCompose(docker, dir string, cfg *config.Config, rec *taskRecord, taskDir string) []string {
	profile := rec.Profile
	if profile == "" {
		profile = config.ProfileBalanced
	}
	return []string{docker, "compose", "-f", profileComposeFile(dir, cfg, profile),
		"-f", filepath.Join(taskDir, "compose.yml"), "-p", rec.Project}
}

// containerState is what docker says of one of a task's containers.
type containerState struct {
	ID       string
	Running  bool
	ExitCode int
	Status   string
	Finished time.Time // zero while it runs
}

// serviceState inspects the task's container of service, if there is one.
func serviceState(ctx context.Context, docker, project, service string) (*containerState, error) {
	out, err := exec.CommandContext(ctx, docker, "ps", "-aq", "--no-trunc",
		"--filter", "label=com.docker.compose.project="+project,
		"--filter", "label=com.docker.compose.service="+service).Output()
	if err != nil {
		return nil, fmt.Errorf("docker ps: %v", err)
	}
	id := strings.TrimSpace(string(out))
	if id == "" {
		return nil, nil
	}
	id, _, _ = strings.Cut(id, "\n")
	out, err = exec.CommandContext(ctx, docker, "inspect", "--format", "{{.State.Running}} {{.State.ExitCode}} {{.State.Status}} {{.State.FinishedAt}}", id).Output()
	if err != nil {
		return nil, fmt.Errorf("docker inspect: %v", err)
	}
	var s containerState
	s.ID = id
	var running, finished string
	if _, err := fmt.Sscan(string(out), &running, &s.ExitCode, &s.Status, &finished); err != nil {
		return nil, fmt.Errorf("docker inspect %s: %q", id, out)
	}
	s.Running = running == "true"
	if t, err := time.Parse(time.RFC3339Nano, finished); err == nil && !s.Running && t.Year() > 1 {
		s.Finished = t
	}
	return &s, nil
}
