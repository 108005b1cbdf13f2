package main

// How a task of agentbox run ends: what ran is stopped, the task's branch
// comes back through agentbox fetch's checks, and a summary says what
// happened.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/denials"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
)

// taskSummary is what run prints when a task ends (--json: this shape).
type taskSummary struct {
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
	RefusedNames []nameCount `json:"refused_names"`
	// RefusedAddresses are the firewall's records of refused connections
	// (at most firewall.LogRate a second), one per destination.
	RefusedAddresses []addrCount    `json:"refused_addresses"`
	RejectedPackets  map[string]int `json:"rejected_packets"`
	// Timings are the seconds each phase took: prepare (checks and the
	// task's clone), start (until the agent runs, the firewall loaded and
	// answering), command, and collect (stop, branch, summary).
	Timings map[string]float64 `json:"timings"`
}

type nameCount struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// addrCount is a refused destination, as agentbox blocked prints it.
type addrCount struct {
	Address  string `json:"address"`
	Port     uint16 `json:"port"` // 0: none (ICMP)
	Protocol string `json:"protocol"`
	Count    int    `json:"count"`
	Why      string `json:"why"`
}

// String is the destination as ADDRESS:PORT/PROTOCOL, or ADDRESS/PROTOCOL
// without a port.
func (a addrCount) String() string {
	if a.Port == 0 {
		return a.Address + "/" + a.Protocol
	}
	return net.JoinHostPort(a.Address, strconv.Itoa(int(a.Port))) + "/" + a.Protocol
}

// deadlineSlack is how much earlier than its deadline an agent may end and
// still count as ended by it: the clocks of the host and of Docker's
// records agree to well within it.
const deadlineSlack = 50 * time.Millisecond

// finish ends the task (what still runs is stopped), collects its branch
// and writes its record.
func finish(ctx context.Context, p *prepared, stopped bool) (*taskSummary, error) {
	eg, err := serviceState(ctx, p.docker, p.rec.Project, "egress")
	if err != nil {
		return nil, err
	}
	ag, err := serviceState(ctx, p.docker, p.rec.Project, "agent")
	if err != nil {
		return nil, err
	}
	// The deadline ended the task when its agent ended at the deadline or
	// after it (egress ends it within moments of it), not before: a task
	// that ended on its own and is collected late did not time out.
	timedOut := ag != nil && !ag.Running && !ag.Finished.IsZero() &&
		!ag.Finished.Before(p.rec.Deadline.Add(-deadlineSlack))
	var exit *int
	if ag != nil {
		exit = &ag.ExitCode
	}
	sum := p.newSummary(timedOut, stopped, exit)
	// Stopping egress (which logs its counters as it exits) and taking the
	// branch from the workspace volume are independent: at once.
	done := make(chan struct{})
	var stopErr error
	go func() {
		defer close(done)
		// docker stop, not compose's: one call, without compose's start-up.
		var ids []string
		for _, c := range []*containerState{ag, eg} {
			if c != nil && c.Running {
				ids = append(ids, c.ID)
			}
		}
		if len(ids) > 0 {
			stopErr = exec.CommandContext(ctx, p.docker, append([]string{"stop", "--time", "1"}, ids...)...).Run()
		}
		if eg != nil {
			if log, err := startLog(exec.CommandContext(ctx, p.docker, "logs", "--timestamps", eg.ID)); err == nil {
				sum.RefusedNames, sum.RefusedAddresses, sum.RejectedPackets, _ = egressRefusals(log, policyCIDRs(p.cfg))
				log.Close()
			}
		}
	}()
	if p.rec.Workspace == workspaceDirect {
		// The agent writes the project itself until it is stopped.
		<-done
		if stopErr != nil {
			failDirect(sum, fmt.Errorf("stopping the task's containers: %w", stopErr))
		} else {
			collectDirect(ctx, p, sum)
		}
	} else {
		collectBranch(ctx, p, sum)
		<-done
	}
	return sum, p.end(sum)
}

// newSummary starts the summary of a task whose agent ended with exit (nil:
// unknown), and says how it ended.
func (p *prepared) newSummary(timedOut, stopped bool, exit *int) *taskSummary {
	sum := &taskSummary{Task: p.rec.Name, Branch: "refs/heads/" + p.rec.Branch, RejectedPackets: map[string]int{},
		Timings: map[string]float64{}, Workspace: workspaceClone}
	if p.rec.Workspace == workspaceDirect {
		sum.Workspace = workspaceDirect
	}
	switch {
	case timedOut:
		sum.State, sum.ExitCode = stateTimedOut, exitTimedOut
	case stopped:
		sum.State, sum.ExitCode = stateStopped, exitStopped
	case exit != nil:
		sum.State, sum.ExitCode = stateExited, *exit
	default:
		sum.State, sum.ExitCode = stateExited, exitError
	}
	return sum
}

// end records how the task ended, with its duration and timings.
func (p *prepared) end(sum *taskSummary) error {
	p.rec.State, p.rec.Ended = sum.State, time.Now()
	p.rec.Exit = &sum.ExitCode
	sum.DurationSeconds = p.rec.Ended.Sub(p.rec.Started).Round(10 * time.Millisecond).Seconds()
	p.timings(sum)
	return p.rec.write(p.cfg.Name)
}

// timings records how long each phase took, when run saw them all.
func (p *prepared) timings(sum *taskSummary) {
	if !p.times.started.IsZero() && !p.times.commandEnded.IsZero() {
		for k, d := range map[string]time.Duration{
			"prepare": p.times.prepared.Sub(p.rec.Started),
			"start":   p.times.started.Sub(p.times.prepared),
			"command": p.times.commandEnded.Sub(p.times.started),
			"collect": p.rec.Ended.Sub(p.times.commandEnded),
		} {
			sum.Timings[k] = d.Round(time.Millisecond).Seconds()
		}
	}
}

// egressRefusals reads the egress log: each name the filter answered with
// NXDOMAIN (as logged: printSummary escapes it), but the entrypoint's own probe,
// each destination of the firewall's records, and its reject counters at
// its exit.
func egressRefusals(log io.Reader, cidrs []netip.Prefix) ([]nameCount, []addrCount, map[string]int, error) {
	rep, err := denials.Parse(log, denials.Ignore(firewall.ProbeName), denials.Packets(firewall.LogPrefix, firewall.LogReasons),
		denials.Ports(firewall.ReasonUnlisted, firewall.ReasonSpecial, cidrs))
	if err != nil {
		return nil, nil, map[string]int{}, err
	}
	var names []nameCount
	for _, r := range rep.Rows {
		names = append(names, nameCount{r.Name, r.Count})
	}
	var addrs []addrCount
	for _, d := range rep.Dests {
		addrs = append(addrs, addrCount{d.Addr.String(), d.Port, d.Proto, d.Count, d.Why})
	}
	return names, addrs, rep.Packets, nil
}

// collectBranch takes the task's branch from its workspace volume (a
// bundle made by the sandbox's own image in collectCommand's container) into the host repository through agentbox fetch's checks, and
// lists what the task left uncommitted.
func collectBranch(ctx context.Context, p *prepared, sum *taskSummary) {
	profile := cmp.Or(p.rec.Profile, config.ProfileBalanced)
	if prof, ok := p.cfg.Profile(profile); ok && prof.Locked {
		sum.BranchStatus = "none: profile " + prof.Name + " keeps the clone read-only; what the task wrote to " +
			generator.OutputDir + " is in volume " + generator.Volume(p.rec.Project, profile, generator.OutputVolume) + " until agentbox rm " + p.rec.Name
		return
	}
	collectFrom(ctx, p, sum, collectCommand(ctx, p))
}

// collectFrom runs cmd, which writes bundleScript's output, and takes the
// branch through agentbox fetch's checks.
func collectFrom(ctx context.Context, p *prepared, sum *taskSummary, cmd *exec.Cmd) {
	f, err := os.CreateTemp("", "agentbox-task-*.bundle")
	if err != nil {
		sum.BranchStatus = "not collected: " + err.Error()
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	lw := &limitWriter{w: f, left: maxBundle}
	var errb headBuffer
	cmd.Stdout, cmd.Stderr = lw, &errb
	err = cmd.Run()
	var problems []string
	for _, l := range strings.Split(errb.String(), "\n") {
		if st, ok := strings.CutPrefix(l, "status "); ok && len(sum.Uncommitted) < 200 {
			sum.Uncommitted = append(sum.Uncommitted, st)
		} else if l != "" {
			problems = append(problems, l)
		}
	}
	if err != nil || lw.over {
		sum.BranchStatus = "not collected: the task's clone has no branch " + p.rec.Branch + " (" + firstLine([]byte(strings.Join(problems, "\n")), err) + ")"
		return
	}
	f.Close()
	res, err := gitgate.Fetch(ctx, gitgate.FetchOptions{Dir: p.rec.Dir, Bundle: f.Name(), Prefix: "refs/heads/agentbox/",
		Policy: gitgate.Policy{Writable: p.cfg.Writable, ReadOnly: taskReadOnly(p)}})
	if err != nil || len(res.Branches) != 1 {
		sum.BranchStatus = fmt.Sprintf("not collected: %v", err)
		return
	}
	b := res.Branches[0]
	sum.BranchStatus = taskBranchStatus(b)
	sum.Refusals = b.Reasons
	if b.Status == gitgate.StatusRefused {
		return
	}
	if log, err := gitOut(ctx, p.rec.Dir, "-c", "log.showSignature=false", "log", "--max-count=100", "--format=%h %s",
		p.rec.Base+".."+sum.Branch, "--"); err == nil && log != "" {
		for _, l := range strings.Split(log, "\n") {
			sum.Commits = append(sum.Commits, l)
		}
	}
	sum.Diffstat, _ = gitOut(ctx, p.rec.Dir, "diff", "--no-ext-diff", "--no-textconv", "--stat=100", p.rec.Base, sum.Branch, "--")
}

// branchEmpty is the status of a task branch with no commit beyond the
// task's base: written, but no work arrived.
const branchEmpty = "empty: no new commit"

// taskBranchStatus is a task branch's status in the summary: fetch's, or
// branchEmpty for a branch written with no new commit.
func taskBranchStatus(b gitgate.Branch) string {
	if shownStatus(b) == statusEmpty {
		return branchEmpty
	}
	return string(b.Status)
}

// reportTask prints the summary (on stdout with --json) and returns the exit
// code run must give.
func reportTask(sum *taskSummary, asJSON bool, stdout, stderr io.Writer) error {
	if err := printTask(sum, asJSON, stdout, stderr); err != nil {
		return err
	}
	switch {
	case sum.ExitCode != 0:
		return &exitErr{sum.ExitCode, nil}
	case sum.BranchStatus == string(gitgate.StatusRefused):
		return &exitErr{exitBranchRefused, nil}
	}
	return nil
}

// printTask prints the summary: as JSON on stdout, or as text on stderr.
func printTask(sum *taskSummary, asJSON bool, stdout, stderr io.Writer) error {
	if asJSON {
		return writeJSON(stdout, sum)
	}
	printSummary(stderr, sum)
	return nil
}

func printSummary(w io.Writer, s *taskSummary) {
	state := s.State
	if s.State == stateExited {
		state = fmt.Sprintf("exited %d", s.ExitCode)
	}
	fmt.Fprintf(w, "agentbox: task %s %s after %.1f s\n", s.Task, state, s.DurationSeconds)
	if s.Workspace == workspaceDirect {
		printDirect(w, s)
		return
	}
	if s.BranchStatus == branchEmpty {
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
	printRefused(w, s)
}

// printDirect prints what a direct task changed in the project.
func printDirect(w io.Writer, s *taskSummary) {
	if s.BranchStatus != workspaceDirect {
		fmt.Fprintf(w, "  project  %s\n", esc(s.BranchStatus))
	}
	fmt.Fprintf(w, "  project  %d paths changed in your working tree (the task worked on it directly)\n", len(s.Uncommitted))
	for _, u := range s.Uncommitted[:min(len(s.Uncommitted), 10)] {
		fmt.Fprintf(w, "           %s\n", esc(u))
	}
	for _, q := range s.Quarantined {
		fmt.Fprintf(w, "  disarmed %s: a git directory the agent made (its HEAD renamed *%s); do not run git in it\n", esc(q), quarantineSuffix)
	}
	for _, l := range s.RemovedLinks {
		fmt.Fprintf(w, "  removed  %s: a link the agent made that led out of the project\n", esc(l))
	}
	printRefused(w, s)
}

// printRefused prints the names the firewall refused.
func printRefused(w io.Writer, s *taskSummary) {
	var refused []string
	for _, n := range s.RefusedNames {
		refused = append(refused, fmt.Sprintf("%s (%d)", esc(n.Name), n.Count))
	}
	if len(refused) > 0 {
		fmt.Fprintf(w, "  refused  %s\n", strings.Join(refused, ", "))
	}
	printAddresses(w, s.RefusedAddresses)
}

// maxSummaryAddrs is how many refused destinations the summary names.
const maxSummaryAddrs = 10

// printAddresses prints the summary's line of refused destinations.
func printAddresses(w io.Writer, addrs []addrCount) {
	if len(addrs) == 0 {
		return
	}
	var shown []string
	for _, a := range addrs[:min(len(addrs), maxSummaryAddrs)] {
		shown = append(shown, fmt.Sprintf("%s (%d)", a, a.Count))
	}
	more := ""
	if n := len(addrs) - len(shown); n > 0 {
		more = fmt.Sprintf(" and %d more (agentbox blocked --task lists them)", n)
	}
	fmt.Fprintf(w, "  refused  %s%s\n", strings.Join(shown, ", "), more)
}

// taskReadOnly are the paths whose changes the task's branch may not bring
// back: the top-level ones and its profile's.
func taskReadOnly(p *prepared) []string {
	prof, _ := p.cfg.Profile(cmp.Or(p.rec.Profile, config.ProfileBalanced))
	return p.cfg.ReadOnlyPaths(prof)
}
