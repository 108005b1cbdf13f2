// Package task owns a task of agentbox run: run's flags checked against
// the sandbox (Flags), its preparation (the clone, the compose override,
// the record on the host), its summary, and its course (start, follow, finish, collect) over a Backend, the place it
// runs: Docker Compose on this machine (Compose, with the direct workspace
// of package task/direct as a variant of its mounts and collect), or a
// Kubernetes Job (package task/kube, whose New its caller passes in:
// BackendOf). A Project is a sandbox's recorded tasks as ps, logs, stop,
// rm and gc find them: each one's backend and live state. The branch
// comes back through internal/gitgate (CollectFrom). Docker runs through package sandbox.
// It prints nothing of its own: the commands print the summary it
// returns; a backend writes its progress lines (a build, a stop) to the
// writers it is given.
package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/atomicfile"
	"github.com/agentbox-dev/agentbox/internal/settings"
)

// Record is a task's record on the host (task.json in its directory):
// what run started and, once it ended, how.
type Record struct {
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
	StateRunning  = "running"
	StateExited   = "exited"
	StateTimedOut = "timed out"
	StateStopped  = "stopped"
)

// Workspaces: the task's own clone, or the project directory itself.
const (
	WorkspaceClone  = "clone"
	WorkspaceDirect = "direct"
)

// OnKubernetes is a record's On for a task on a cluster ("" for this
// machine).
const OnKubernetes = "kubernetes"

// Root is where the tasks of every sandbox keep their clones and records.
func Root() (string, error) { return settings.StateDir("tasks") }

// Dir is the directory of task name of the sandbox project.
func Dir(project, name string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, project, name), nil
}

// Read reads the record of task name of the sandbox project.
func Read(project, name string) (*Record, error) {
	dir, err := Dir(project, name)
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
	var t Record
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("reading task %q: %w", name, err)
	}
	return &t, nil
}

// Write writes the record into its directory of the sandbox project.
func (t *Record) Write(project string) error {
	dir, err := Dir(project, t.Name)
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

// List returns the records of the sandbox's tasks, by start time.
func List(project string) ([]*Record, error) {
	root, err := Root()
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
	var out []*Record
	for _, e := range entries {
		if !e.IsDir() || !generator.TaskName.MatchString(e.Name()) {
			continue
		}
		t, err := Read(project, e.Name())
		if err != nil {
			continue // a task being created or removed
		}
		out = append(out, t)
	}
	Sort(out)
	return out, nil
}

// Sort sorts records by start time.
func Sort(ts []*Record) {
	slices.SortFunc(ts, func(a, b *Record) int { return a.Started.Compare(b.Started) })
}
