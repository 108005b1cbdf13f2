package main

// How agentbox run and stop print a task's summary, and the exit code it
// gives.

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentbox-dev/agentbox/task"
	"github.com/agentbox-dev/agentbox/task/direct"
)

// reportTask prints the summary (on stdout with --json) and returns the exit
// code run must give.
func reportTask(sum *task.Summary, asJSON bool, stdout, stderr io.Writer) error {
	return reportSummary(sum, sum.RunExit(), asJSON, stdout, stderr)
}

// reportSummary prints the summary, as JSON on stdout or as text on stderr, and
// returns the exit code the command must give.
func reportSummary(sum *task.Summary, code int, asJSON bool, stdout, stderr io.Writer) error {
	if asJSON {
		if err := writeJSON(stdout, sum); err != nil {
			return err
		}
	} else {
		printSummary(stderr, sum)
	}
	if code != 0 {
		return &exitErr{code, nil}
	}
	return nil
}

func printSummary(w io.Writer, s *task.Summary) {
	state := s.State
	if s.State == task.StateExited {
		state = fmt.Sprintf("exited %d", s.ExitCode)
	}
	fmt.Fprintf(w, "agentbox: task %s %s after %.1f s\n", s.Task, state, s.DurationSeconds)
	if s.Workspace == task.WorkspaceDirect {
		printDirect(w, s)
		return
	}
	if s.BranchStatus == task.BranchEmpty {
		fmt.Fprintf(w, "  branch   %s: %s\n", s.Branch, s.BranchStatus)
	} else {
		fmt.Fprintf(w, "  branch   %s: %s, %d new commits\n", s.Branch, esc(s.BranchStatus), len(s.Commits))
	}
	for _, r := range s.Refusals {
		fmt.Fprintf(w, "           refused: %s\n", reasonText(r))
	}
	for _, c := range s.Commits[:min(len(s.Commits), 10)] {
		fmt.Fprintf(w, "           %s\n", esc(c))
	}
	if s.Diffstat != "" {
		lines := strings.Split(s.Diffstat, "\n")
		fmt.Fprintf(w, "  changed  %s\n", esc(strings.TrimSpace(lines[len(lines)-1])))
	}
	if n := len(s.Uncommitted); n > 0 {
		fmt.Fprintf(w, "  uncommitted  %d files left in the task's clone (agentbox rm removes them), e.g. %s\n", n, esc(s.Uncommitted[0]))
	}
	printNetwork(w, s)
}

// printDirect prints what a direct task changed in the project.
func printDirect(w io.Writer, s *task.Summary) {
	if s.BranchStatus != task.WorkspaceDirect {
		fmt.Fprintf(w, "  project  %s\n", esc(s.BranchStatus))
	}
	fmt.Fprintf(w, "  project  %d paths changed in your working tree (the task worked on it directly)\n", len(s.Uncommitted))
	for _, u := range s.Uncommitted[:min(len(s.Uncommitted), 10)] {
		fmt.Fprintf(w, "           %s\n", esc(u))
	}
	for _, q := range s.Quarantined {
		fmt.Fprintf(w, "  disarmed %s: a git directory the agent made (its HEAD renamed *%s); do not run git in it\n", esc(q), direct.QuarantineSuffix)
	}
	for _, l := range s.RemovedLinks {
		fmt.Fprintf(w, "  removed  %s: a link the agent made that led out of the project\n", esc(l))
	}
	printNetwork(w, s)
}

// printNetwork prints the destinations the task used and what was refused.
func printNetwork(w io.Writer, s *task.Summary) {
	for _, line := range s.NetworkLines() {
		fmt.Fprintf(w, "  %s\n", line)
	}
}
