package main

// agentbox allow --list and agentbox revoke.

import (
	"context"
	"fmt"
	"io"

	"github.com/agentbox-dev/agentbox/egress"
	"github.com/spf13/cobra"
)

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
