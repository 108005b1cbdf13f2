package main

// agentbox requests, approve and deny: the agent's requests for grants,
// answered by a person (package approval; docs/approvals.md).

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/agentbox-dev/agentbox/approval"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/spf13/cobra"
)

func newRequestsCmds(dir *string, d deps, stdout, stderr io.Writer) []*cobra.Command {
	var asJSON bool
	host := func() (*approval.Host, error) {
		p, err := egressOf(d, *dir)
		if err != nil {
			return nil, err
		}
		// The agent chose the name: escaped like the rest of its text.
		p.Note = func(note string) { fmt.Fprintf(stderr, "agentbox: %s\n", termsafe.Message(note)) }
		return approval.Local(p), nil
	}
	list := &cobra.Command{Use: "requests", Args: cobra.NoArgs,
		Short:   "List the agent's requests for grants (sandbox and running tasks; docs/approvals.md)",
		Example: "  agentbox requests\n  agentbox requests --json",
		RunE: func(c *cobra.Command, args []string) error {
			h, err := host()
			if err != nil {
				return err
			}
			reqs, skipped, err := h.List(c.Context())
			for _, s := range skipped {
				if s.Task != "" {
					fmt.Fprintf(stderr, "agentbox: task %s: %s\n", s.Task, termsafe.Message(s.Err.Error()))
				}
			}
			if err != nil {
				return err
			}
			return report(stdout, "requests", map[bool]string{true: "json", false: "text"}[asJSON], reqs)
		}}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON (the shape is in docs/approvals.md)")
	watch := &cobra.Command{Use: "watch", Args: cobra.NoArgs,
		Short:   "Show the agent's requests as they arrive and answer each: y, n, or a duration (notify-send where the host has it)",
		Example: "  agentbox watch",
		RunE: func(c *cobra.Command, args []string) error {
			h, err := host()
			if err != nil {
				return err
			}
			return h.Watch(c.Context(), c.InOrStdin(), stdout, approval.NotifySend(), time.Second)
		}}
	return append([]*cobra.Command{list, watch}, newAnswerCmds(host, stdout)...)
}

// newAnswerCmds are approve and deny.
func newAnswerCmds(host func() (*approval.Host, error), stdout io.Writer) []*cobra.Command {
	var dur, why string
	answer := func(do func(ctx context.Context, h *approval.Host, id string) (approval.Request, error)) func(*cobra.Command, []string) error {
		return func(c *cobra.Command, args []string) error {
			h, err := host()
			if err != nil {
				return err
			}
			r, err := do(c.Context(), h, args[0])
			if err == nil {
				fmt.Fprintln(stdout, r.Answered())
			}
			return err
		}
	}
	var policy bool
	approve := &cobra.Command{Use: "approve ID [--for DURATION | --policy]", Args: cobra.ExactArgs(1),
		Short:   "Grant an agent's request as agentbox allow would (same limits, kernel expiry, audit record), or add it to the policy",
		Example: "  agentbox approve r3f2a9c01b7de\n  agentbox approve r3f2a9c01b7de --for 10m\n  agentbox approve r3f2a9c01b7de --policy",
		RunE: answer(func(ctx context.Context, h *approval.Host, id string) (approval.Request, error) {
			if policy {
				r, res, err := h.ApproveIntoPolicy(ctx, id)
				if res != nil && err == nil {
					(&policyOptions{}).print(res, stdout, stdout) // the files written, the live change
				}
				return r, err
			}
			return h.Approve(ctx, id, dur)
		})}
	approve.Flags().StringVar(&dur, "for", "", "how long the grant lasts instead of the wished duration: 30m, 1h")
	approve.Flags().BoolVar(&policy, "policy", false, "add the destination to agentbox.yaml's allowlist instead (agentbox policy add: no end, a change to review), applied to the running sandbox")
	approve.MarkFlagsMutuallyExclusive("for", "policy")
	deny := &cobra.Command{Use: "deny ID [--reason TEXT]", Args: cobra.ExactArgs(1),
		Short:   "Refuse an agent's request (logged; the agent learns the reason)",
		Example: `  agentbox deny r3f2a9c01b7de --reason "use the internal mirror"`,
		RunE: answer(func(ctx context.Context, h *approval.Host, id string) (approval.Request, error) {
			return h.Deny(ctx, id, why)
		})}
	deny.Flags().StringVar(&why, "reason", "", "why, for the agent and the audit log")
	return []*cobra.Command{approve, deny}
}
