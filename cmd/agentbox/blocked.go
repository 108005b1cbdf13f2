package main

// agentbox blocked: what the sandbox refused, from the egress log.

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/agentbox-dev/agentbox/egress"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/spf13/cobra"
)

type blockedOptions struct {
	dir, task, since string
	json, suggest    bool
}

func newBlockedCmd(dir *string, d deps, stdout io.Writer) *cobra.Command {
	o := &blockedOptions{}
	c := &cobra.Command{
		Use:   "blocked",
		Short: "List what the sandbox refused (names, addresses and ports, reject counters) and suggest agentbox.yaml lines",
		Long: `List the names the sandbox's DNS filter refused, one row per name with its
count, first and last time, and query types, from the egress log; then the
connections the firewall refused, one row per address, port and protocol
with its count, first and last time and why (from the firewall's records,
at most a few a second); then the firewall's reject counters, which count
every packet. --suggest prints the network.domains entries that would allow
what was refused, leaving out noise (reverse lookups, .local, single-label
names, search-domain artefacts), and network.cidrs entries for public
addresses refused over TCP: review them before you paste.`,
		Example: `  agentbox blocked
  agentbox blocked --since 1h --suggest
  agentbox blocked --task fix-123 --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(c.Context(), d, stdout, c.ErrOrStderr())
		},
	}
	o.flags(c, dir, "what was refused", "docs/firewall.md")
	c.Flags().BoolVar(&o.suggest, "suggest", false, "print the agentbox.yaml lines that would allow what was refused")
	return c
}

// flags adds the flags blocked and connections share.
func (o *blockedOptions) flags(c *cobra.Command, dir *string, what, doc string) {
	c.Flags().StringVar(&o.task, "task", "", "a task of agentbox run instead of the sandbox")
	_ = c.RegisterFlagCompletionFunc("task", completeTask(dir, false))
	c.Flags().StringVar(&o.since, "since", "", "only "+what+" since: a duration (1h, 30m) or an RFC 3339 time")
	c.Flags().BoolVar(&o.json, "json", false, "print JSON (the shape is in "+doc+")")
}

func (o *blockedOptions) run(ctx context.Context, d deps, stdout, stderr io.Writer) error {
	since, err := parseSince(o.since, d.now())
	if err != nil {
		return err
	}
	if err := checkTask(o.task); err != nil {
		return err
	}
	v, stale, err := egress.BlockedIn(ctx, d.egressLog, o.dir, o.task, since, o.suggest)
	if stale {
		fmt.Fprint(stderr, sandbox.StaleNote)
	}
	if err != nil {
		return err
	}
	switch {
	case o.json:
		return report(stdout, "blocked", "json", v)
	case o.suggest:
		return report(stdout, "blocked", "suggest", v)
	}
	return report(stdout, "blocked", "text", v)
}

// parseSince reads --since (egress.ParseSince); a bad one is a usage error.
func parseSince(s string, now time.Time) (time.Time, error) {
	t, err := egress.ParseSince(s, now)
	if err != nil {
		return t, &exitErr{exitUsage, err}
	}
	return t, nil
}

// portCell is a port of blocked's table: "-" for none (ICMP).
func portCell(d egress.BlockedDest) string {
	if d.Port == 0 {
		return "-"
	}
	return strconv.Itoa(int(d.Port))
}

// when is a time of blocked's table: UTC to the second, or "-".
func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}
