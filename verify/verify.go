// Package verify is agentbox verify: the probe script (verify.sh, run as
// the agent in the running agent container), the probes it must report
// (Table), its inputs (Vars) and the run of its phases around a recreate
// of the agent container, with the fetch probe done on the host. It
// returns the probes; the command prints them.
package verify

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
)

// Script holds the probes; it runs in the agent container as
// `bash -s -- PHASE`.
//
//go:embed verify.sh
var Script string

// Probe is one row of agentbox verify.
type Probe struct {
	Result   string `json:"result"` // PASS, FAIL or SKIP
	Area     string `json:"area"`
	Probe    string `json:"probe"`
	Tried    string `json:"tried"`
	Happened string `json:"happened"`
}

// Report is agentbox verify's outcome (--json: this shape).
type Report struct {
	Passed bool    `json:"passed"`
	Probes []Probe `json:"probes"`
}

// Failed counts the probes that failed.
func (r Report) Failed() int {
	n := 0
	for _, p := range r.Probes {
		if p.Result == "FAIL" {
			n++
		}
	}
	return n
}

// Parse reads the script's lines; anything else is an error.
func Parse(out []byte) ([]Probe, error) {
	var ps []Probe
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 5 || (f[0] != "PASS" && f[0] != "FAIL" && f[0] != "SKIP") {
			return nil, fmt.Errorf("unexpected probe output %q", line)
		}
		ps = append(ps, Probe{f[0], f[1], f[2], f[3], f[4]})
	}
	return ps, nil
}

// Spec is one probe that verify.sh must report, in one phase.
type Spec struct {
	Phase, Area, Name string
	When              func(*config.Config, *config.Profile) bool // nil: always expected
}

// Expected says whether cfg's profile prof expects the probe.
func (s Spec) Expected(cfg *config.Config, prof *config.Profile) bool {
	return s.When == nil || s.When(cfg, prof)
}

// Table lists every probe verify.sh reports, by the phase that reports it.
// verify passes only when each expected probe reported exactly once and
// nothing else did: a script that stopped early, or a docker that printed
// nothing, is a failure, not "all 0 probes passed". The table is a second
// statement of the script's probes on purpose, the expectation its output
// is checked against: add a row here with every probe added to verify.sh
// (TestVerifyFlow runs the script and checks both agree).
var Table = []Spec{
	{"all", "files", "host paths", nil},
	{"all", "files", "workspace is a clone", nil},
	{"all", "files", "read-only git database", unlocked},
	{"all", "files", "host git config", unlocked},
	{"all", "files", "read-only workspace", locked},
	{"all", "files", "read-only root", locked},
	{"all", "files", "writable output", locked},
	{"all", "files", "hidden files", nil},
	{"all", "files", "docker socket", nil},
	{"all", "network", "unlisted name", mode(firewall.ModeAllowlist)},
	{"all", "network", "no name resolves", mode(firewall.ModeNone)},
	{"all", "network", "every name resolves", mode(firewall.ModeOpen)},
	{"all", "network", "unlisted address", not(mode(firewall.ModeOpen))},
	{"all", "network", "public address", mode(firewall.ModeOpen)},
	{"all", "network", "other resolver", not(mode(firewall.ModeOpen))},
	{"all", "network", "IPv6", not(mode(firewall.ModeOpen))},
	{"all", "network", "metadata", nil},
	{"all", "network", "low ports", nil},
	{"all", "network", "allowed name", nil},
	{"all", "network", "other name at an allowed address", mode(firewall.ModeAllowlist)},
	{"all", "network", "git front door", hasForge},
	{"all", "privileges", "capabilities", nil},
	{"all", "privileges", "no_new_privs", nil},
	{"all", "privileges", "sudo", nil},
	{"all", "privileges", "network settings", nil},
	{"all", "privileges", "pids limit", nil},
	{"all", "resources", "memory limit", nil},
	{"check", "persistence", "outside the workspace", nil},
	{"check", "persistence", "workspace", nil},
	{"check", "persistence", "state volume", hasStateVolume},
}

func hasForge(cfg *config.Config, p *config.Profile) bool { return firstForge(cfg, p) != "" }

func hasStateVolume(cfg *config.Config, _ *config.Profile) bool {
	return cfg.Agent.StateDir != ""
}

func locked(_ *config.Config, p *config.Profile) bool   { return p.Locked }
func unlocked(_ *config.Config, p *config.Profile) bool { return !p.Locked }

func mode(m firewall.Mode) func(*config.Config, *config.Profile) bool {
	return func(_ *config.Config, p *config.Profile) bool { return p.Mode == m }
}

func not(f func(*config.Config, *config.Profile) bool) func(*config.Config, *config.Profile) bool {
	return func(c *config.Config, p *config.Profile) bool { return !f(c, p) }
}

// Check checks that the probes one phase reported are exactly the ones
// Table expects of it for cfg's profile prof.
func Check(phase string, cfg *config.Config, prof *config.Profile, got []Probe) error {
	seen := map[string]int{}
	for _, p := range got {
		seen[p.Area+"/"+p.Probe]++
	}
	var missing []string
	expected := 0
	for _, spec := range Table {
		if spec.Phase != phase || !spec.Expected(cfg, prof) {
			continue
		}
		expected++
		key := spec.Area + "/" + spec.Name
		switch seen[key] {
		case 0:
			missing = append(missing, key)
		case 1:
		default:
			return fmt.Errorf("the probe script reported %q twice", key)
		}
		delete(seen, key)
	}
	for _, p := range got {
		if key := p.Area + "/" + p.Probe; seen[key] > 0 {
			return fmt.Errorf("the probe script reported an unexpected probe %q (a probe added to verify.sh needs its row in verify.Table)", key)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the probe script did not report %d of %d probes (%s): it stopped early or its output was lost, so the sandbox is not verified",
			len(missing), expected, strings.Join(missing, ", "))
	}
	return nil
}
