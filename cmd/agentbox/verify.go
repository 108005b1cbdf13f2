package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/spf13/cobra"
)

// verifyScript holds the probes; it runs in the agent container.
//
//go:embed verify.sh
var verifyScript string

// probe is one row of `agentbox verify`.
type probe struct {
	Result   string `json:"result"` // PASS, FAIL or SKIP
	Area     string `json:"area"`
	Probe    string `json:"probe"`
	Tried    string `json:"tried"`
	Happened string `json:"happened"`
}

// parseProbes reads the script's lines; anything else is an error.
func parseProbes(out []byte) ([]probe, error) {
	var ps []probe
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 5 || (f[0] != "PASS" && f[0] != "FAIL" && f[0] != "SKIP") {
			return nil, fmt.Errorf("unexpected probe output %q", line)
		}
		ps = append(ps, probe{f[0], f[1], f[2], f[3], f[4]})
	}
	return ps, nil
}

// probeSpec is one probe that verify.sh must report, in one phase.
type probeSpec struct {
	phase, area, name string
	when              func(*config.Config, *config.Profile) bool // nil: always expected
}

// probeTable lists every probe verify.sh reports, by the phase that reports
// it. verify passes only when each expected probe reported exactly once and
// nothing else did: a script that stopped early, or a docker that printed
// nothing, is a failure, not "all 0 probes passed". The table is a second
// statement of the script's probes on purpose, the expectation its output is
// checked against: add a row here with every probe added to verify.sh
// (TestVerifyFlow runs the script and checks both agree).
var probeTable = []probeSpec{
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

// checkProbes checks that the probes one phase reported are exactly the ones
// probeTable expects of it for cfg.
func checkProbes(phase string, cfg *config.Config, prof *config.Profile, got []probe) error {
	seen := map[string]int{}
	for _, p := range got {
		seen[p.Area+"/"+p.Probe]++
	}
	var missing []string
	expected := 0
	for _, spec := range probeTable {
		if spec.phase != phase || spec.when != nil && !spec.when(cfg, prof) {
			continue
		}
		expected++
		key := spec.area + "/" + spec.name
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
			return fmt.Errorf("the probe script reported an unexpected probe %q (a probe added to verify.sh needs its row in probeTable)", key)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the probe script did not report %d of %d probes (%s): it stopped early or its output was lost, so the sandbox is not verified",
			len(missing), expected, strings.Join(missing, ", "))
	}
	return nil
}

// verifyVar is one input of verify.sh, passed by name in its environment
// (docker compose exec -e NAME=VALUE); the phase is its only argument.
// verify.sh reads exactly these, a required one as ${NAME:?} and an
// optional one, not passed when empty, as ${NAME:-}
// (TestVerifyScriptReadsVerifyVars). Every value was validated when
// agentbox.yaml was loaded.
type verifyVar struct {
	name     string
	optional bool
	value    func(in verifyInput) string
}

// verifyInput is what verify.sh's variables come from: the configuration,
// the running profile and its probe targets.
type verifyInput struct {
	cfg  *config.Config
	prof *config.Profile
	t    config.Verify
}

var verifyVars = []verifyVar{
	{"AGENTBOX_VERIFY_WORKSPACE", false, func(in verifyInput) string { return in.cfg.Workspace }},
	{"AGENTBOX_VERIFY_STATE_DIR", true, func(in verifyInput) string {
		if in.prof.Locked {
			return ""
		}
		return in.cfg.Agent.StateDir
	}},
	{"AGENTBOX_VERIFY_ALLOWED", true, func(in verifyInput) string { return in.t.Allowed }},
	{"AGENTBOX_VERIFY_UNLISTED_NAME", false, func(in verifyInput) string { return in.t.UnlistedName }},
	{"AGENTBOX_VERIFY_UNLISTED_ADDRESS", false, func(in verifyInput) string { return in.t.UnlistedAddress }},
	{"AGENTBOX_VERIFY_RESOLVER", false, func(in verifyInput) string { return in.t.Resolver }},
	{"AGENTBOX_VERIFY_IPV6_ADDRESS", false, func(in verifyInput) string { return in.t.IPv6Address }},
	{"AGENTBOX_VERIFY_METADATA_ADDRESS", false, func(in verifyInput) string { return in.t.MetadataAddress }},
	{"AGENTBOX_VERIFY_MEMORY_BYTES", false, func(in verifyInput) string { return strconv.FormatInt(in.prof.MemoryBytes(), 10) }},
	{"AGENTBOX_VERIFY_PIDS", false, func(in verifyInput) string { return strconv.Itoa(in.prof.Pids) }},
	{"AGENTBOX_VERIFY_ORIGIN", false, func(verifyInput) string { return generator.OriginDir }},
	{"AGENTBOX_VERIFY_HIDDEN", true, func(in verifyInput) string { return strings.Join(in.cfg.HiddenPatterns(in.prof), "\n") }},
	{"AGENTBOX_VERIFY_NETWORK", false, func(in verifyInput) string { return networkMode(in.prof.Mode) }},
	{"AGENTBOX_VERIFY_OUTPUT", true, func(in verifyInput) string {
		if in.prof.Locked {
			return generator.OutputDir
		}
		return ""
	}},
}

// networkMode names a firewall mode for verify.sh.
func networkMode(m firewall.Mode) string {
	if m == firewall.ModeAllowlist {
		return "allowlist"
	}
	return string(m)
}

// verifyEnv returns verify.sh's environment for profile prof of cfg:
// NAME=VALUE, in the order of verifyVars, each optional variable left out
// when empty.
func verifyEnv(cfg *config.Config, prof *config.Profile) []string {
	in := verifyInput{cfg: cfg, prof: prof, t: generator.ProfileVerifyTargets(cfg, prof)}
	var env []string
	for _, v := range verifyVars {
		if val := v.value(in); val != "" || !v.optional {
			env = append(env, v.name+"="+val)
		}
	}
	return env
}

type verifyOptions struct {
	sandboxOptions
	json bool
}

func newVerifyCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	o := &verifyOptions{}
	c := &cobra.Command{
		Use:   "verify",
		Short: "Probe the running sandbox: files, network, privileges, resources, persistence",
		Long: `Run a battery of probes inside the running agent container, as the agent,
and print one row per probe: PASS or FAIL, what was tried, what happened.

  files        nothing of the host but the project's git database, read-only and
               with its config masked; the workspace is a clone on a volume; no
               workspace.hidden file was cloned; a commit of a .vscode task and
               a gitlink made in the clone is refused by fetch's gate (run on
               the host, into a scratch repository); no Docker socket
  network      an unlisted name does not resolve; an unlisted address is refused
               at once; another resolver answers with the filter's NXDOMAIN; IPv6
               and the metadata address are refused; ports below 1024 need
               privilege; an allowed name connects
  privileges   no capabilities, no_new_privs, no sudo, no network settings; the
               pids limit holds and the container survives it
  resources    an allocation past the memory limit is killed, not the container
  persistence  across a restart of the agent container (it is recreated), a file
               outside the workspace is gone; the workspace and the state volume
               keep theirs

The probes are the running profile's promises. Under a locked profile: no name
resolves (not even one the balanced profile allows), the workspace and the root
file system cannot be written, /output and /tmp can (no persistence or fetch
probe: the clone is read-only and fresh at every start). Under open: an unlisted
name resolves through the filter and an unlisted address connects; the metadata
address is still refused. Exit 1 if any probe fails, and also if any expected
probe did not report at all (the error names them). A probe that cannot tell
for want of a network or an upstream resolver says "no network/upstream".

The network targets come from the verify: section of agentbox.yaml; the
defaults, for real use:

  allowed           the first allowed name, on its first port
  unlisted_name     the first of ` + strings.Join(config.DefaultUnlistedNames, ", ") + `
                    that the policy does not allow
  unlisted_address  ` + config.DefaultUnlistedAddress + `
  resolver          ` + config.DefaultResolver + `
  ipv6_address      ` + config.DefaultIPv6Address + `
  metadata_address  ` + config.DefaultMetadataAddress + `

agentbox blocked --suggest never proposes them.`,
		Example: `  agentbox up && agentbox verify
  agentbox verify --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dir, o.running = *dir, true
			return o.run(c.Context(), stdout, stderr)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print the probes as JSON")
	return c
}

func (o *verifyOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	argv, cfg, err := o.compose(ctx, true) // verify recreates the agent container
	if err != nil {
		return err
	}
	prof, err := sandbox.ProfileOf(cfg, o.profile)
	if err != nil {
		return err
	}
	sandbox.WarnStale(ctx, argv[0], o.dir, cfg.Name, stderr)
	fmt.Fprintf(stderr, "agentbox: verifying profile %s\n", prof.Name)
	execArgs := []string{"exec", "-T"}
	for _, kv := range verifyEnv(cfg, prof) {
		execArgs = append(execArgs, "-e", kv)
	}
	execArgs = append(execArgs, "agent", "bash", "-s", "--")
	exec := func(phase string) ([]probe, error) {
		out, err := runCompose(ctx, argv, verifyScript, append(execArgs, phase)...)
		if err != nil {
			return nil, fmt.Errorf("running the probes in the agent container (is the sandbox up? agentbox up): %w", err)
		}
		ps, err := parseProbes(out)
		if err != nil {
			return nil, err
		}
		if err := checkProbes(phase, cfg, prof, ps); err != nil {
			return nil, &exitErr{exitError, fmt.Errorf("agentbox: %w", err)}
		}
		return ps, nil
	}
	probes, err := exec("all")
	if err != nil {
		return err
	}
	if prof.Locked {
		// Nothing to bring back, nor to keep: the clone is read-only, and
		// fresh at every start.
		return o.report(probes, stdout, stderr)
	}
	probes = append(probes, fetchProbe(ctx, argv, cfg))
	if _, err := exec("write"); err != nil {
		return err
	}
	// The probes ran as the agent, and the agent may be running: a link can
	// have appeared since the check in compose, and recreating mounts anew.
	if err := generator.CheckMounts(o.dir, cfg); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "agentbox: recreating the agent container to check persistence")
	if _, err := runCompose(ctx, argv, "", "up", "-d", "--force-recreate", "--no-deps", "--wait", "agent"); err != nil {
		return fmt.Errorf("recreating the agent container: %w", err)
	}
	more, err := exec("check")
	if err != nil {
		return err
	}
	return o.report(append(probes, more...), stdout, stderr)
}

// report prints the probes, as a table or JSON, and fails when one did.
func (o *verifyOptions) report(probes []probe, stdout, stderr io.Writer) error {
	failed := 0
	for _, p := range probes {
		if p.Result == "FAIL" {
			failed++
		}
	}
	if o.json {
		if err := writeJSON(stdout, map[string]any{"passed": failed == 0, "probes": probes}); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RESULT\tAREA\tPROBE\tTRIED\tHAPPENED")
		for _, p := range probes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Result, p.Area, p.Probe, esc(p.Tried), esc(p.Happened))
		}
		tw.Flush()
	}
	if failed > 0 {
		return &exitErr{exitError, fmt.Errorf("agentbox: %d of %d probes failed", failed, len(probes))}
	}
	fmt.Fprintf(stderr, "agentbox: all %d probes passed\n", len(probes))
	return nil
}
