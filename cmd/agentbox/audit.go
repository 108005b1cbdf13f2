package main

// agentbox audit: the audit log of allow, revoke and policy (package audit).

import (
	"context"
	"fmt"
	"io"

	"github.com/agentbox-dev/agentbox/approval"
	"github.com/agentbox-dev/agentbox/internal/termsafe"

	"github.com/spf13/cobra"
)

type auditOptions struct {
	dir, since string
	json       bool
}

func newAuditCmd(dir *string, d deps, stdout io.Writer) *cobra.Command {
	o := &auditOptions{}
	c := &cobra.Command{
		Use:   "audit",
		Short: "Print the audit log of agentbox allow and revoke",
		Long: `Print the audit log of the project's sandbox and tasks: every grant asked of
agentbox allow (also those refused, with why) and every revoke, with the host
user, the destination, its ports, the duration, the expiry and the reason; and
an expire event at the expiry of each grant's ports that no revoke ended and no
later grant renewed. The kernel ends a grant by itself, so expire events are
derived from the log when it is printed, not written. The log is JSON lines at
$XDG_STATE_HOME/agentbox/audit/NAME.jsonl (else ~/.local/state/...), on the
host and mounted nowhere: the agent can neither write nor erase it.`,
		Example: `  agentbox audit
  agentbox audit --since 24h --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(c.Context(), d, stdout, c.ErrOrStderr())
		},
	}
	c.Flags().StringVar(&o.since, "since", "", "only the records since: a duration (1h, 30m) or an RFC 3339 time")
	c.Flags().BoolVar(&o.json, "json", false, "print JSON (the shape is in docs/profiles-and-elevation.md)")
	return c
}

func (o *auditOptions) run(ctx context.Context, d deps, stdout, stderr io.Writer) error {
	since, err := parseSince(o.since, d.now())
	if err != nil {
		return err
	}
	p, err := egressOf(d, o.dir)
	if err != nil {
		return err
	}
	recs, warn, err := approval.AuditLog(ctx, p, since)
	if warn != nil {
		fmt.Fprintf(stderr, "agentbox: the agent's requests: %s\n", termsafe.Message(warn.Error()))
	}
	if err != nil {
		return err
	}
	if o.json {
		return report(stdout, "audit", "json", recs)
	}
	return report(stdout, "audit", "text", recs)
}
