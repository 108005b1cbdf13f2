package main

// How a task of agentbox run ends: what ran is stopped, the task's branch
// comes back through agentbox fetch's checks, and a summary says what
// happened.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/denials"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
	"github.com/agentbox-dev/agentbox/internal/iolimit"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
)

// deadlineSlack is how much earlier than its deadline an agent may end and
// still count as ended by it: the clocks of the host and of Docker's
// records agree to well within it.
const deadlineSlack = 50 * time.Millisecond

// egressRefusals reads the egress log: each name the filter answered with
// NXDOMAIN (as logged: printSummary escapes it), but the entrypoint's own probe,
// each destination of the firewall's records, and its reject counters at
// its exit.
func egressRefusals(log io.Reader, cidrs []netip.Prefix) ([]task.NameCount, []task.AddrCount, map[string]int, error) {
	rep, err := denials.Parse(log, denials.Ignore(firewall.ProbeName), denials.Packets(firewall.LogPrefix, firewall.LogReasons),
		denials.Ports(firewall.ReasonUnlisted, firewall.ReasonSpecial, cidrs))
	if err != nil {
		return nil, nil, map[string]int{}, err
	}
	var names []task.NameCount
	for _, r := range rep.Rows {
		names = append(names, task.NameCount{Name: r.Name, Count: r.Count})
	}
	var addrs []task.AddrCount
	for _, d := range rep.Dests {
		addrs = append(addrs, task.AddrCount{Address: d.Addr.String(), Port: d.Port, Protocol: d.Proto, Count: d.Count, Why: d.Why})
	}
	return names, addrs, rep.Packets, nil
}

// collectBranch takes the task's branch from its workspace volume (a
// bundle made by the sandbox's own image in collectCommand's container) into the host repository through agentbox fetch's checks, and
// lists what the task left uncommitted.
func collectBranch(ctx context.Context, p *prepared, sum *task.Summary) {
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
func collectFrom(ctx context.Context, p *prepared, sum *task.Summary, cmd *exec.Cmd) {
	f, err := os.CreateTemp("", "agentbox-task-*.bundle")
	if err != nil {
		sum.BranchStatus = "not collected: " + err.Error()
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	lw := &iolimit.Writer{W: f, Left: maxBundle}
	var errb iolimit.Head
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
	if err != nil || lw.Over {
		sum.BranchStatus = "not collected: the task's clone has no branch " + p.rec.Branch + " (" + sandbox.FirstLine([]byte(strings.Join(problems, "\n")), err) + ")"
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
	if gitgate.Shown(b) == gitgate.StatusEmpty {
		return branchEmpty
	}
	return string(b.Status)
}

// reportTask prints the summary (on stdout with --json) and returns the exit
// code run must give.
func reportTask(sum *task.Summary, asJSON bool, stdout, stderr io.Writer) error {
	if err := printTask(sum, asJSON, stdout, stderr); err != nil {
		return err
	}
	if code := sum.RunExit(); code != 0 {
		return &exitErr{code, nil}
	}
	return nil
}

// printTask prints the summary: as JSON on stdout, or as text on stderr.
func printTask(sum *task.Summary, asJSON bool, stdout, stderr io.Writer) error {
	if asJSON {
		return writeJSON(stdout, sum)
	}
	printSummary(stderr, sum)
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
func printDirect(w io.Writer, s *task.Summary) {
	if s.BranchStatus != task.WorkspaceDirect {
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
func printRefused(w io.Writer, s *task.Summary) {
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
func printAddresses(w io.Writer, addrs []task.AddrCount) {
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
