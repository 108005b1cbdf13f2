package verify

import (
	"context"
	"fmt"
	"io"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// Run runs the probes in the running sandbox p (opened with Starts: verify
// recreates the agent container) and returns them; what it does is said
// on stderr. Under an unlocked profile: the "all" phase, the fetch probe,
// the "write" phase, a recreate of the agent container, then the "check"
// phase (persistence). Under a locked one, the "all" phase alone: nothing
// to bring back, nor to keep, as the clone is read-only and fresh at every
// start. A phase whose probes are not exactly Table's is an error.
func Run(ctx context.Context, p *sandbox.Project, stderr io.Writer) (Report, error) {
	cfg := p.Config
	prof, err := sandbox.ProfileOf(cfg, p.Profile)
	if err != nil {
		return Report{}, err
	}
	sandbox.WarnStale(ctx, p.Compose.Path, p.Dir, cfg.Name, stderr)
	fmt.Fprintf(stderr, "agentbox: verifying profile %s\n", prof.Name)
	ph := phases{c: p.Compose, cfg: cfg, prof: prof}
	probes, err := ph.run(ctx, "all")
	if err != nil || prof.Locked {
		return report(probes), err
	}
	probes = append(probes, FetchProbe(ctx, p.Compose, cfg))
	if _, err := ph.run(ctx, "write"); err != nil {
		return Report{}, err
	}
	// The probes ran as the agent, and the agent may be running: a link can
	// have appeared since the check in Open, and recreating mounts anew.
	if err := generator.CheckMounts(p.Dir, cfg); err != nil {
		return Report{}, err
	}
	fmt.Fprintln(stderr, "agentbox: recreating the agent container to check persistence")
	if _, err := p.Compose.Output(ctx, "", "up", "-d", "--force-recreate", "--no-deps", "--wait", "agent"); err != nil {
		return Report{}, fmt.Errorf("recreating the agent container: %w", err)
	}
	more, err := ph.run(ctx, "check")
	if err != nil {
		return Report{}, err
	}
	return report(append(probes, more...)), nil
}

func report(probes []Probe) Report {
	r := Report{Probes: probes}
	r.Passed = r.Failed() == 0
	return r
}

// phases runs the script's phases in the agent container of c, for
// profile prof of cfg.
type phases struct {
	c    sandbox.Compose
	cfg  *config.Config
	prof *config.Profile
}

// run runs one phase: docker compose exec -T -e NAME=VALUE... agent bash
// -s -- PHASE, the script on stdin.
func (ph phases) run(ctx context.Context, phase string) ([]Probe, error) {
	args := []string{"exec", "-T"}
	for _, kv := range Env(ph.cfg, ph.prof) {
		args = append(args, "-e", kv)
	}
	args = append(args, "agent", "bash", "-s", "--", phase)
	out, err := ph.c.Output(ctx, Script, args...)
	if err != nil {
		return nil, fmt.Errorf("running the probes in the agent container (is the sandbox up? agentbox up): %w", err)
	}
	ps, err := Parse(out)
	if err != nil {
		return nil, err
	}
	if err := Check(phase, ph.cfg, ph.prof, ps); err != nil {
		return nil, fmt.Errorf("agentbox: %w", err)
	}
	return ps, nil
}
