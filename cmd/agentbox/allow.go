package main

// agentbox allow and revoke: timed grants of an address, a CIDR or a name,
// which the egress container's nftables sets expire by themselves, and
// allow --list, the grants in force.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/egress"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/spf13/cobra"
)

type allowOptions struct {
	dir, task, duration, reason string
	list, json                  bool
}

func newAllowCmd(dir *string, d deps, stdout io.Writer) *cobra.Command {
	o := &allowOptions{}
	c := &cobra.Command{
		Use:   "allow DEST --for DURATION --reason TEXT",
		Short: "Let the running sandbox reach an address, CIDR or name for a while (logged; the kernel takes it back)",
		Long: `Grant the running sandbox (or a task of agentbox run: --task) an address,
CIDR or name on some TCP ports for a while. DEST is HOST, HOST:PORT[,PORT] or
[IPv6PREFIX]:PORT, HOST an address, a CIDR or a name (example.com or
*.example.com: the name and the names below it, which then resolve); the port
is 443 when none is written. The egress container's nftables sets expire the
grant by themselves: at expiry new connections are refused again and
established ones are cut, even if agentbox is gone. Where the gateway runs
(allowlist profiles), a name's grant carries TLS and plain HTTP that name it
(the SNI or Host), on every port, over IPv4 on a port the policy has no names
on: grant the address for another protocol (SSH, a database).

Refused: anything overlapping a private, loopback, link-local, multicast or
other special range (a name's addresses in them stay refused by the kernel), or
elevation.never; a duration over elevation.max_duration (default 1h); any grant
when elevation.allowed is false. Every grant asked for goes to the audit log
(agentbox audit) with its result, refused or not (a malformed command line is
no grant).`,
		Example: `  agentbox allow 198.18.7.0/24 --for 30m --reason "fetch the test fixtures"
  agentbox allow '*.docs.example.com' --for 15m --reason "read the API docs"
  agentbox allow '[2001:2::/48]:443,8443' --for 1h --reason "staging API"
  agentbox allow 198.18.13.5:22 --task fix-123 --for 10m --reason "clone over ssh"
  agentbox allow --list`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			if o.json && !o.list {
				return usageErrorf("--json goes with --list")
			}
			if o.list {
				if len(args) > 0 {
					return usageErrorf("agentbox allow --list takes no destination")
				}
				return o.runList(c.Context(), d, stdout)
			}
			if len(args) == 0 {
				return usageErrorf("name a destination: agentbox allow DEST --for DURATION --reason TEXT")
			}
			return o.grant(c.Context(), d, args[0], stdout, c.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVar(&o.task, "task", "", "a task of agentbox run instead of the sandbox")
	_ = c.RegisterFlagCompletionFunc("task", completeTask(dir, false))
	f.StringVar(&o.duration, "for", "", "how long the grant lasts: 30m, 1h, 1h30m (at most elevation.max_duration)")
	f.StringVar(&o.reason, "reason", "", "why the sandbox needs it (recorded in the audit log)")
	f.BoolVar(&o.list, "list", false, "list the grants in force, with the time left")
	f.BoolVar(&o.json, "json", false, "with --list: print JSON (the shape is in docs/profiles-and-elevation.md)")
	return c
}

func (o *allowOptions) grant(ctx context.Context, d deps, dest string, stdout, stderr io.Writer) error {
	if err := checkTask(o.task); err != nil {
		return err
	}
	r, err := egress.ParseRequest(dest, o.duration, o.reason)
	if err != nil {
		return usageErrorf("%v", err)
	}
	p, err := egressOf(d, o.dir)
	if err != nil {
		return err
	}
	p.Note = func(note string) { fmt.Fprintf(stderr, "agentbox: %s\n", termsafe.Message(note)) }
	expires, err := p.Allow(ctx, o.task, r)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "granted %s ports %s for %s, until %s\n", r.Dest, egress.PortArg(r.Ports), config.FormatTaskDuration(r.For), expires.UTC().Format(time.RFC3339))
	return nil
}

func (o *allowOptions) runList(ctx context.Context, d deps, stdout io.Writer) error {
	if err := checkTask(o.task); err != nil {
		return err
	}
	p, err := egressOf(d, o.dir)
	if err != nil {
		return err
	}
	rows, err := p.Grants(ctx, o.task)
	if err != nil {
		return err
	}
	if o.json {
		return report(stdout, "allow.list", "json", rows)
	}
	return report(stdout, "allow.list", "text", rows)
}

type revokeOptions struct {
	dir, task string
}

func newRevokeCmd(dir *string, d deps, stdout io.Writer) *cobra.Command {
	o := &revokeOptions{}
	c := &cobra.Command{
		Use:   "revoke DEST",
		Short: "End a grant of agentbox allow before its time (logged)",
		Long: `End a grant of agentbox allow now: DEST is written as for allow (the port is
443 when none is written). The revoke goes to the audit log (agentbox audit).`,
		Example: `  agentbox revoke 198.18.7.0/24
  agentbox revoke docs.example.com
  agentbox revoke 198.18.13.5:22 --task fix-123`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("name one destination: agentbox revoke DEST")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(c.Context(), d, args[0], stdout)
		},
	}
	c.Flags().StringVar(&o.task, "task", "", "a task of agentbox run instead of the sandbox")
	_ = c.RegisterFlagCompletionFunc("task", completeTask(dir, false))
	return c
}

func (o *revokeOptions) run(ctx context.Context, d deps, dest string, stdout io.Writer) error {
	if err := checkTask(o.task); err != nil {
		return err
	}
	dst, err := egress.ParseDest(dest)
	if err != nil {
		return usageErrorf("%v", err)
	}
	p, err := egressOf(d, o.dir)
	if err != nil {
		return err
	}
	if err := p.Revoke(ctx, o.task, dst); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked %s ports %s\n", dst, egress.PortArg(dst.Ports))
	return nil
}

func checkTask(task string) error {
	if task != "" && !generator.TaskName.MatchString(task) {
		return usageErrorf("invalid --task %q: a task's name is lower-case letters, digits and '-' (agentbox ps lists them)", task)
	}
	return nil
}

// egressOf is the project in dir with its agentbox.yaml loaded
// (egressProject).
func egressOf(d deps, dir string) (*egress.Project, error) {
	cfg, err := sandbox.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	p := egressProject(d, dir, cfg.Name)
	p.Config = cfg
	return p, nil
}

// egressProject is the sandbox name of the project in dir, whose egress
// containers and audit log are reached through d; without its
// agentbox.yaml, it lists grants and finds its audit log.
func egressProject(d deps, dir, name string) *egress.Project {
	return &egress.Project{Dir: dir, Name: name, Egress: d.egress, Profile: d.profile,
		AuditDir: d.auditDir, User: d.user, Now: d.now}
}
