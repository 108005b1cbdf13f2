package main

// agentbox connections: the gateway's record of each connection.

import (
	"io"

	"github.com/agentbox-dev/agentbox/egress"
	"github.com/spf13/cobra"
)

func newConnectionsCmd(dir *string, d deps, stdout io.Writer) *cobra.Command {
	o := &blockedOptions{}
	c := &cobra.Command{
		Use:     "connections",
		Short:   "List the connections the gateway handled: name, port, address, bytes each way, duration, verdict and why",
		Long:    "List the gateway's record of each connection of the sandbox or a task, oldest first, from the egress log\n(rate-limited: the records dropped are counted; docs/gateway.md).",
		Example: "  agentbox connections --since 1h\n  agentbox connections --task fix-123 --json",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			since, err := parseSince(o.since, d.now())
			if err == nil {
				err = checkTask(o.task)
			}
			if err != nil {
				return err
			}
			l, err := egress.ConnectionsIn(c.Context(), d.egressLog, *dir, o.task, since)
			if err != nil {
				return err
			}
			return egress.WriteConnections(stdout, l, o.json)
		},
	}
	o.flags(c, dir, "the connections that ended", "docs/gateway.md")
	return c
}
