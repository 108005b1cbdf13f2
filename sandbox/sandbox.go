// Package sandbox is the running sandbox: the docker CLI and docker
// compose on the generated files. It is the one place that runs docker:
// the daemon check, compose's argument lists and runs, the state of a
// service's container, the egress container's restarts, the egress
// container of the sandbox or of a task (EgressIn: what allow, policy and
// blocked change and read), which project owns a compose project name,
// the sandbox's status (Status) and the bundle of the agent's branches
// that fetch takes (BundleBranches). Commands run through a Runner, so
// that tests replace docker with a fake.
package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Cmd is one run of a program.
type Cmd struct {
	Args   []string // Args[0] is the program
	Env    []string // nil: agentbox's own environment
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Grace, when not 0, makes the end of the context an interrupt, as
	// from the terminal, with Grace to stop before the program is killed.
	Grace time.Duration
}

// Runner runs commands.
type Runner interface {
	Run(ctx context.Context, c Cmd) error
}

// Exec is the Runner that runs programs.
type Exec struct{}

// Run runs c.
func (Exec) Run(ctx context.Context, c Cmd) error {
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Env, c.Stdin, c.Stdout, c.Stderr
	if c.Grace > 0 {
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = c.Grace
	}
	return cmd.Run()
}

// Docker is the docker CLI at Path, run by Runner (nil: Exec).
type Docker struct {
	Path   string
	Runner Runner
}

func (d Docker) runner() Runner {
	if d.Runner == nil {
		return Exec{}
	}
	return d.Runner
}

// output runs docker with args and returns its stdout.
func (d Docker) output(ctx context.Context, args ...string) ([]byte, error) {
	var out bytes.Buffer
	err := d.runner().Run(ctx, Cmd{Args: append([]string{d.Path}, args...), Stdout: &out})
	return out.Bytes(), err
}

// combined runs docker with args and returns its stdout and stderr
// together.
func (d Docker) combined(ctx context.Context, args ...string) ([]byte, error) {
	var out bytes.Buffer
	err := d.runner().Run(ctx, Cmd{Args: append([]string{d.Path}, args...), Stdout: &out, Stderr: &out})
	return out.Bytes(), err
}

// Check checks that the docker CLI, compose v2 and the daemon are there,
// and returns docker.
func Check(ctx context.Context) (Docker, error) {
	path, err := exec.LookPath("docker")
	if err != nil {
		return Docker{}, errors.New("docker is not installed (or not on PATH): agentbox runs the sandbox with Docker Engine and compose v2")
	}
	d := Docker{Path: path}
	var out bytes.Buffer
	if err := d.runner().Run(ctx, Cmd{Args: []string{path, "compose", "version", "--short"}, Stdout: &out, Stderr: &out}); err != nil {
		if _, v1 := exec.LookPath("docker-compose"); v1 == nil {
			return Docker{}, errors.New("only compose v1 (docker-compose) is installed; agentbox needs compose v2, the `docker compose` plugin")
		}
		return Docker{}, fmt.Errorf("docker compose (v2) is not available: %s", FirstLine(out.Bytes(), err))
	} else if v := strings.TrimPrefix(strings.TrimSpace(out.String()), "v"); strings.HasPrefix(v, "1.") {
		return Docker{}, fmt.Errorf("docker compose %s is compose v1; agentbox needs compose v2", v)
	}
	// `docker version` reports the daemon's own error when there is no
	// daemon; `docker info --format` does not on Debian's 20.10 CLI, whose
	// template fails first on the missing server ("reflect: indirection
	// through nil pointer to embedded struct field Info").
	var stdout, stderr bytes.Buffer
	err = d.runner().Run(ctx, Cmd{Args: []string{path, "version", "--format", "{{.Server.Version}}"}, Stdout: &stdout, Stderr: &stderr})
	if err != nil || strings.TrimSpace(stdout.String()) == "" {
		return Docker{}, fmt.Errorf("cannot reach the Docker daemon (is dockerd running?): %s", DaemonError(stderr.Bytes(), stdout.Bytes(), err))
	}
	return d, nil
}

// DaemonError picks the line that says why the daemon cannot be reached
// from what a docker CLI printed: the first line of stderr, then of stdout,
// that is not a Go template's error ("ERROR: " taken off).
func DaemonError(stderr, stdout []byte, err error) string {
	for _, out := range [][]byte{stderr, stdout} {
		for _, line := range strings.Split(string(out), "\n") {
			line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "ERROR:"))
			if line != "" && !strings.HasPrefix(line, "template:") {
				return line
			}
		}
	}
	if err != nil {
		return err.Error()
	}
	return "docker version reported no server"
}

// FirstLine is the first line of out, else err's text.
func FirstLine(out []byte, err error) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return err.Error()
	}
	return line
}
