package task

// How a task's branch comes back: bundled by collect.sh in a container that
// runs nothing of the clone's, then through agentbox fetch's checks into
// the host repository, with its commits and diffstat for the summary; and
// the firewall's refusals from the egress log.

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/denials"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
	"github.com/agentbox-dev/agentbox/internal/iolimit"
	"github.com/agentbox-dev/agentbox/internal/shquote"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// EgressRefusals reads the egress log: each name the filter answered with
// NXDOMAIN (as logged: the command that prints it escapes it), but the
// entrypoint's own probe, each destination of the firewall's records, and its reject counters at
// its exit.
func EgressRefusals(log io.Reader, cidrs []netip.Prefix) ([]NameCount, []AddrCount, map[string]int, error) {
	rep, err := denials.Parse(log, denials.Ignore(firewall.ProbeName), denials.Packets(firewall.LogPrefix, firewall.LogReasons),
		denials.Ports(firewall.ReasonUnlisted, firewall.ReasonSpecial, cidrs))
	if err != nil {
		return nil, nil, map[string]int{}, err
	}
	var names []NameCount
	for _, r := range rep.Rows {
		names = append(names, NameCount{Name: r.Name, Count: r.Count})
	}
	var addrs []AddrCount
	for _, d := range rep.Dests {
		addrs = append(addrs, AddrCount{Address: d.Addr.String(), Port: d.Port, Protocol: d.Proto, Count: d.Count, Why: d.Why})
	}
	return names, addrs, rep.Packets, nil
}

// collectBranch takes the task's branch from its workspace volume (a
// bundle made by the sandbox's own image in collectArgs' container) into
// the host repository through agentbox fetch's checks, and lists what the
// task left uncommitted.
func collectBranch(ctx context.Context, p *Prepared, sum *Summary) {
	profile := cmp.Or(p.Rec.Profile, config.ProfileBalanced)
	if prof, ok := p.Cfg.Profile(profile); ok && prof.Locked {
		sum.BranchStatus = "none: profile " + prof.Name + " keeps the clone read-only; what the task wrote to " +
			generator.OutputDir + " is in volume " + generator.Volume(p.Rec.Project, profile, generator.OutputVolume) + " until agentbox rm " + p.Rec.Name
		return
	}
	CollectFrom(ctx, p, sum, func(ctx context.Context, stdout, stderr io.Writer) error {
		return p.Docker.RunContainer(ctx, collectArgs(p.Cfg, p.Rec), stdout, stderr)
	})
}

// CollectFrom runs bundle, which writes BundleScript's output, and takes
// the branch through agentbox fetch's checks.
func CollectFrom(ctx context.Context, p *Prepared, sum *Summary, bundle func(ctx context.Context, stdout, stderr io.Writer) error) {
	f, err := os.CreateTemp("", "agentbox-task-*.bundle")
	if err != nil {
		sum.BranchStatus = "not collected: " + err.Error()
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	lw := &iolimit.Writer{W: f, Left: gitgate.MaxBundle}
	var errb iolimit.Head
	err = bundle(ctx, lw, &errb)
	var problems []string
	for _, l := range strings.Split(errb.String(), "\n") {
		if st, ok := strings.CutPrefix(l, "status "); ok && len(sum.Uncommitted) < 200 {
			sum.Uncommitted = append(sum.Uncommitted, st)
		} else if l != "" {
			problems = append(problems, l)
		}
	}
	if err != nil || lw.Over {
		sum.BranchStatus = "not collected: the task's clone has no branch " + p.Rec.Branch + " (" + sandbox.FirstLine([]byte(strings.Join(problems, "\n")), err) + ")"
		return
	}
	f.Close()
	res, err := gitgate.Fetch(ctx, gitgate.FetchOptions{Dir: p.Rec.Dir, Bundle: f.Name(), Prefix: "refs/heads/agentbox/",
		Policy: gitgate.Policy{Writable: p.Cfg.Writable, ReadOnly: readOnly(p)}})
	if err != nil || len(res.Branches) != 1 {
		sum.BranchStatus = fmt.Sprintf("not collected: %v", err)
		return
	}
	b := res.Branches[0]
	sum.BranchStatus = branchStatus(b)
	sum.Refusals = b.Reasons
	if b.Status == gitgate.StatusRefused {
		return
	}
	if log, err := gitOut(ctx, p.Rec.Dir, "-c", "log.showSignature=false", "log", "--max-count=100", "--format=%h %s",
		p.Rec.Base+".."+sum.Branch, "--"); err == nil && log != "" {
		for _, l := range strings.Split(log, "\n") {
			sum.Commits = append(sum.Commits, l)
		}
	}
	sum.Diffstat, _ = gitOut(ctx, p.Rec.Dir, "diff", "--no-ext-diff", "--no-textconv", "--stat=100", p.Rec.Base, sum.Branch, "--")
}

// BranchEmpty is the status of a task branch with no commit beyond the
// task's base: written, but no work arrived.
const BranchEmpty = "empty: no new commit"

// branchStatus is a task branch's status in the summary: fetch's, or
// BranchEmpty for a branch written with no new commit.
func branchStatus(b gitgate.Branch) string {
	if gitgate.Shown(b) == gitgate.StatusEmpty {
		return BranchEmpty
	}
	return string(b.Status)
}

// readOnly are the paths whose changes the task's branch may not bring
// back: the top-level ones and its profile's.
func readOnly(p *Prepared) []string {
	prof, _ := p.Cfg.Profile(cmp.Or(p.Rec.Profile, config.ProfileBalanced))
	return p.Cfg.ReadOnlyPaths(prof)
}

// The collection of a task's branch from its clone: a script that runs in
// a container of its own (collectArgs) or in a cluster task's collect
// container, and runs nothing of the clone's.

//go:embed collect.sh
var collectScript string

// BundleScript, run by sh with the task's name as $1, writes the status of
// the clone at workspace on stderr, line by line, then a bundle of the
// task's branch (renamed TASK, so that fetch's prefix makes it
// agentbox/TASK) on stdout (collect.sh).
func BundleScript(workspace string) string {
	return "ws=" + shquote.Word(workspace) + "\n" + collectScript
}

// collectPids bounds the processes of the collect container.
const collectPids = 64

// collectArgs are the arguments of docker run of the container that runs
// BundleScript on a local task's workspace volume: locked down as the
// agent's container is (no capabilities, no new privileges, the agent's
// uid, its memory and CPU limits or less), with no network and a
// read-only root.
func collectArgs(cfg *config.Config, rec *Record) []string {
	profile := cmp.Or(rec.Profile, config.ProfileBalanced)
	vol := generator.Volume(rec.Project, profile, generator.WorkspaceVolume)
	mem, pids, cpus := cfg.Memory, cfg.Pids, cfg.CPUs
	if prof, ok := cfg.Profile(profile); ok {
		mem, pids, cpus = prof.Memory, prof.Pids, prof.CPUs
	}
	mem = cmp.Or(mem, config.DefaultMemory)
	return []string{"--rm", "--network", "none", "--user", fmt.Sprintf("%d:%d", cfg.UID, cfg.GID),
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--read-only",
		"--tmpfs", "/tmp:rw,nosuid,nodev,noexec,size=256m",
		"--pids-limit", strconv.Itoa(min(collectPids, max(pids, 1))),
		"--memory", mem, "--memory-swap", mem,
		"--cpus", strconv.FormatFloat(collectCPUs(cpus), 'f', -1, 64),
		"-v", vol + ":/workspace:ro", "--entrypoint", "sh", cfg.Name + "-agent", "-c", BundleScript("/workspace"), "sh", rec.Name}
}

// collectCPUs is the collect container's CPU limit: the agent's, at most one.
func collectCPUs(agent float64) float64 {
	if agent > 0 && agent < 1 {
		return agent
	}
	return 1
}
