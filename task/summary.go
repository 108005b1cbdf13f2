package task

import (
	"github.com/agentbox-dev/agentbox/internal/connlog"
	"net"
	"strconv"
	"time"

	"github.com/agentbox-dev/agentbox/internal/gitgate"
)

// Exit codes of a task besides its command's own.
const (
	ExitError    = 1   // agentbox could not run it, or its end is unknown
	ExitTimedOut = 124 // the deadline came, as timeout(1) says it
	ExitStopped  = 130 // agentbox stop, or Ctrl-C
	// ExitBranchRefused: the command exited 0, but fetch's checks refused
	// the task's branch.
	ExitBranchRefused = 3
)

// Summary is what run prints when a task ends (--json: this shape).
type Summary struct {
	Task            string           `json:"task"`
	State           string           `json:"state"` // exited, timed out, stopped
	ExitCode        int              `json:"exit_code"`
	DurationSeconds float64          `json:"duration_seconds"`
	Branch          string           `json:"branch"` // refs/heads/agentbox/TASK on the host
	BranchStatus    string           `json:"branch_status"`
	Refusals        []gitgate.Reason `json:"branch_refusals"` // why fetch's checks refused the branch
	Commits         []string         `json:"commits"`         // "abbrev subject", newest first
	Diffstat        string           `json:"diffstat"`
	Uncommitted     []string         `json:"uncommitted"` // git status --porcelain lines in the task's clone (direct: the project)
	Workspace       string           `json:"workspace"`   // clone or direct
	// Quarantined are the git directories a direct task's agent made in
	// the project, disarmed (their HEAD renamed).
	Quarantined []string `json:"quarantined,omitempty"`
	// RemovedLinks are the links a direct task's agent made that led out
	// of the project, removed ("PATH -> TARGET").
	RemovedLinks []string    `json:"removed_links,omitempty"`
	RefusedNames []NameCount `json:"refused_names"`
	// RefusedAddresses are the firewall's records of refused connections
	// (at most firewall.LogRate a second), one per destination.
	RefusedAddresses []AddrCount    `json:"refused_addresses"`
	RejectedPackets  map[string]int `json:"rejected_packets"`
	// Destinations are the gateway's records of the task's connections,
	// by name and port (all of them, refused ones too), and
	// DroppedConnections the records its rate limit dropped.
	Destinations       []connlog.Destination `json:"destinations"`
	DroppedConnections int                   `json:"dropped_connection_records"`
	// Timings are the seconds each phase took: prepare (checks and the
	// task's clone), start (until the agent runs, the firewall loaded and
	// answering), command, and collect (stop, branch, summary).
	Timings map[string]float64 `json:"timings"`
}

// NameCount is a refused name and how often it was asked.
type NameCount struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// AddrCount is a refused destination, as agentbox blocked prints it.
type AddrCount struct {
	Address  string `json:"address"`
	Port     uint16 `json:"port"` // 0: none (ICMP)
	Protocol string `json:"protocol"`
	Count    int    `json:"count"`
	Why      string `json:"why"`
}

// String is the destination as ADDRESS:PORT/PROTOCOL, or ADDRESS/PROTOCOL
// without a port.
func (a AddrCount) String() string {
	if a.Port == 0 {
		return a.Address + "/" + a.Protocol
	}
	return net.JoinHostPort(a.Address, strconv.Itoa(int(a.Port))) + "/" + a.Protocol
}

// NewSummary starts the summary of rec's task, whose agent ended with exit
// (nil: unknown), and says how it ended.
func NewSummary(rec *Record, timedOut, stopped bool, exit *int) *Summary {
	sum := &Summary{Task: rec.Name, Branch: "refs/heads/" + rec.Branch, RejectedPackets: map[string]int{},
		Destinations: []connlog.Destination{}, Timings: map[string]float64{}, Workspace: WorkspaceClone}
	if rec.Workspace == WorkspaceDirect {
		sum.Workspace = WorkspaceDirect
	}
	switch {
	case timedOut:
		sum.State, sum.ExitCode = StateTimedOut, ExitTimedOut
	case stopped:
		sum.State, sum.ExitCode = StateStopped, ExitStopped
	case exit != nil:
		sum.State, sum.ExitCode = StateExited, *exit
	default:
		sum.State, sum.ExitCode = StateExited, ExitError
	}
	return sum
}

// Refused reports whether fetch's checks refused the task's branch.
func (s *Summary) Refused() bool { return s.BranchStatus == string(gitgate.StatusRefused) }

// RunExit is the exit code of agentbox run for the task: its own, else
// ExitBranchRefused when its branch was refused, else 0.
func (s *Summary) RunExit() int {
	switch {
	case s.ExitCode != 0:
		return s.ExitCode
	case s.Refused():
		return ExitBranchRefused
	}
	return 0
}

// StopExit is the exit code of agentbox stop: 0, as stop did what it was
// asked (the task's own code stays in the summary), or ExitBranchRefused
// when fetch's checks refused the task's branch, as for run.
func (s *Summary) StopExit() int {
	if s.Refused() {
		return ExitBranchRefused
	}
	return 0
}

// Times are when the phases of a task that run followed ended; a zero
// time is a phase run did not see (a task collected by agentbox stop).
type Times struct {
	Prepared, Started, CommandEnded time.Time
}

// record adds the phases' durations to sum, when run saw them all.
func (t Times) record(rec *Record, sum *Summary) {
	if t.Started.IsZero() || t.CommandEnded.IsZero() {
		return
	}
	for k, d := range map[string]time.Duration{
		"prepare": t.Prepared.Sub(rec.Started),
		"start":   t.Started.Sub(t.Prepared),
		"command": t.CommandEnded.Sub(t.Started),
		"collect": rec.Ended.Sub(t.CommandEnded),
	} {
		sum.Timings[k] = d.Round(time.Millisecond).Seconds()
	}
}
