package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentbox-dev/agentbox/generator"
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

type verifyOptions struct {
	sandboxOptions
	json bool
}

func newVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &verifyOptions{}
	c := &cobra.Command{
		Use:   "verify",
		Short: "Probe the running sandbox: files, network, privileges, resources, persistence",
		Long: `Run a battery of probes inside the running agent container, as the agent,
and print one row per probe: PASS or FAIL, what was tried, what happened.

  files        nothing of the host beyond the workspace; .git/hooks, .git/config,
               .devcontainer, .agentbox, agentbox.yaml, agentbox.lock read-only;
               no Docker socket
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

The network targets come from the verify: section of agentbox.yaml, with
defaults for real use. Exit 1 if any probe fails.`,
		Example: `  agentbox up && agentbox verify
  agentbox verify --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return o.run(ctx(c), stdout, stderr)
		},
	}
	o.flags(c)
	c.Flags().BoolVar(&o.json, "json", false, "print the probes as JSON")
	return c
}

func (o *verifyOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	argv, cfg, err := o.compose(ctx)
	if err != nil {
		return err
	}
	t := generator.VerifyTargets(cfg)
	orDash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	probeArgs := func(phase string) []string {
		return []string{phase, cfg.Workspace, orDash(cfg.Agent.StateDir), orDash(t.Allowed), t.UnlistedName,
			t.UnlistedAddress, t.Resolver, t.IPv6Address, t.MetadataAddress, strconv.FormatInt(cfg.MemoryBytes(), 10), strconv.Itoa(cfg.Pids)}
	}
	exec := func(phase string) ([]probe, error) {
		out, err := runCompose(ctx, argv, verifyScript, append([]string{"exec", "-T", "agent", "bash", "-s", "--"}, probeArgs(phase)...)...)
		if err != nil {
			return nil, fmt.Errorf("running the probes in the agent container (is the sandbox up? agentbox up): %w", err)
		}
		return parseProbes(out)
	}
	probes, err := exec("all")
	if err != nil {
		return err
	}
	if _, err := exec("write"); err != nil {
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
	probes = append(probes, more...)
	failed := 0
	for _, p := range probes {
		if p.Result == "FAIL" {
			failed++
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"passed": failed == 0, "probes": probes}); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RESULT\tAREA\tPROBE\tTRIED\tHAPPENED")
		for _, p := range probes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Result, p.Area, p.Probe, p.Tried, p.Happened)
		}
		tw.Flush()
	}
	if failed > 0 {
		return &exitErr{exitError, fmt.Errorf("agentbox: %d of %d probes failed", failed, len(probes))}
	}
	fmt.Fprintf(stderr, "agentbox: all %d probes passed\n", len(probes))
	return nil
}

// runCompose runs docker compose (argv) with args, stdin as given, and
// returns its stdout.
func runCompose(ctx context.Context, argv []string, stdin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("docker compose %s: %s", args[0], firstLine(errb.Bytes(), err))
	}
	return out.Bytes(), nil
}
