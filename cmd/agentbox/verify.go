package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/verify"
	"github.com/spf13/cobra"
)

type verifyOptions struct {
	dir  string
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
			o.dir = *dir
			return o.run(c.Context(), stdout, stderr)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print the probes as JSON")
	return c
}

func (o *verifyOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	p, err := openSandbox(ctx, sandbox.Want{Dir: o.dir, Running: true, Starts: true}) // verify recreates the agent container
	if err != nil {
		return err
	}
	r, err := verify.Run(ctx, p, stderr)
	if err != nil {
		return err
	}
	return o.report(r, stdout, stderr)
}

// report prints the probes, as a table or JSON, and fails when one did.
func (o *verifyOptions) report(r verify.Report, stdout, stderr io.Writer) error {
	format := "text"
	if o.json {
		format = "json"
	}
	if err := report(stdout, "verify", format, r); err != nil {
		return err
	}
	if failed := r.Failed(); failed > 0 {
		return &exitErr{exitError, fmt.Errorf("agentbox: %d of %d probes failed", failed, len(r.Probes))}
	}
	fmt.Fprintf(stderr, "agentbox: all %d probes passed\n", len(r.Probes))
	return nil
}
