package main

// agentbox policy add and remove: an entry of the allowlist written into
// agentbox.yaml (or taken out) in place, the files regenerated, and the
// change applied to the running sandbox.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/egress"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/spf13/cobra"
)

type policyOptions struct {
	dir, profile, ports string
	noApply, remove     bool
}

func newPolicyCmd(dir *string, d deps, stdout, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "policy add|remove",
		Short: "Add names or CIDRs to the allowlist in agentbox.yaml, or remove them, and apply that to the running sandbox",
		Long: `Edit the allowlist in agentbox.yaml in place (comments, order, indentation
and quoting stay as written), regenerate the files, and apply the change to
the running sandbox unless --no-apply says not to.

The entry goes to the allowlist of --profile (default: the profile the
sandbox runs, else profile: in agentbox.yaml): network, or
profiles.NAME.network for a profile with a network of its own. Profiles from
open (every public destination) and locked ones without a network have none.`,
		Example: `  agentbox policy add docs.example.com
  agentbox policy add git.example.com --ports 22,443
  agentbox policy remove docs.example.com`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return usageErrorf("name a subcommand: agentbox policy add|remove NAME...")
		},
	}
	c.AddCommand(newPolicyEditCmd(dir, d, false, stdout, stderr), newPolicyEditCmd(dir, d, true, stdout, stderr))
	return c
}

func newPolicyEditCmd(dir *string, d deps, remove bool, stdout, stderr io.Writer) *cobra.Command {
	o := &policyOptions{remove: remove}
	c := &cobra.Command{
		Use:   "add NAME... [--ports PORT[,PORT]]",
		Short: "Allow names (example.com, *.example.com) or CIDRs: written into agentbox.yaml and applied to the running sandbox at once",
		Long: `Add each NAME (example.com: the name and the names below it;
*.example.com: the names below it) or CIDR to the allowlist in agentbox.yaml,
on --ports (default: the list's ports, network.ports), and regenerate the
files. Refused, with nothing changed: a name that elevation.never covers, a
range of the private, loopback, link-local and other special ranges or of
elevation.never (write such a range by hand), or an entry already there with
other ports.

Then, unless --no-apply, the running sandbox gets it at once, through the
egress's live sets (as agentbox allow does, without an end): nothing
restarts, and the agent keeps its processes and state. A *.name applies live
as the name and the names below it until agentbox up rebuilds the egress
image, which bakes the new policy in. Each live change goes to the audit log.`,
		Example: `  agentbox policy add docs.example.com
  agentbox policy add '*.cdn.example.com' git.example.com --ports 443,8443
  agentbox policy add 198.18.7.0/24 --ports 5432 --no-apply`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 { // name what to add: agentbox policy add NAME... [--ports PORT[,PORT]]
				return usageErrorf("name what to %s: agentbox policy %s", c.Name(), c.Use)
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(c.Context(), d, args, stdout, stderr)
		},
	}
	if remove {
		c.Use = "remove NAME..."
		c.Short = "Remove names or CIDRs from the allowlist in agentbox.yaml, and from the running sandbox"
		c.Long = `Remove each NAME or CIDR from the allowlist in agentbox.yaml (as written
there: example.com and *.example.com are two entries) and regenerate the
files. Then, unless --no-apply: an entry that agentbox policy add applied
live since the sandbox started is taken out live (nothing restarts); an
entry baked into the running egress image cannot be: agentbox up rebuilds
the egress and recreates the sandbox, and says so first (the agent's
processes restart; its volumes, state and workspace, stay).`
		c.Example = `  agentbox policy remove docs.example.com
  agentbox policy remove '*.cdn.example.com' --no-apply`
	} else {
		c.Flags().StringVar(&o.ports, "ports", "", "TCP ports, such as 443 or 22,443 (default: network.ports, else 443)")
	}
	c.Flags().StringVar(&o.profile, "profile", "", "the profile whose allowlist to edit (default: the one the sandbox runs, else profile: in agentbox.yaml)")
	_ = c.RegisterFlagCompletionFunc("profile", completeProfiles(dir))
	c.Flags().BoolVar(&o.noApply, "no-apply", false, "edit agentbox.yaml and regenerate only; leave the running sandbox as it is")
	return c
}

func (o *policyOptions) run(ctx context.Context, d deps, args []string, stdout, stderr io.Writer) error {
	entries, err := egress.ParsePolicyEntries(args, o.ports)
	if err != nil {
		return usageErrorf("%v", err)
	}
	p, err := egressOf(d, o.dir)
	if err != nil {
		return err
	}
	if _, ok := p.Config.Profile(o.profile); o.profile != "" && !ok {
		return usageErrorf("--profile: %v", config.ProfileError(p.Config, o.profile))
	}
	r, err := p.ChangePolicy(ctx, egress.PolicyChange{Profile: o.profile, Entries: entries, Remove: o.remove, NoApply: o.noApply})
	o.print(r, stdout, stderr)
	if err != nil || len(r.Baked) == 0 {
		return err
	}
	fmt.Fprintf(stderr, "agentbox: %s: in the running egress image, which cannot drop it live; restarting the sandbox (agentbox up --profile %s): the egress and agent containers are recreated and the agent's processes restart; its volumes (state, workspace) stay\n",
		strings.Join(r.Baked, ", "), r.Running)
	if d.up == nil {
		return errors.New("agentbox up is not available here")
	}
	return d.up(ctx, o.dir, r.Running, stdout, stderr)
}

// print says what the edit did: the entries there already, the files
// written, the changes made to the running sandbox, or why none was.
func (o *policyOptions) print(r *egress.PolicyResult, stdout, stderr io.Writer) {
	for _, e := range r.Already {
		fmt.Fprintf(stderr, "agentbox: %s is in the allowlist already\n", e)
	}
	for _, ch := range r.Files {
		fmt.Fprintf(stdout, "%-6s %s\n", ch.Kind, esc(ch.Path)) // a stale file's name is the disk's
	}
	for _, l := range r.Live {
		if o.remove {
			fmt.Fprintf(stdout, "removed %s ports %s from the running sandbox: nothing restarted\n", l.Entry, egress.PortArg(l.Dest.Ports))
		} else {
			fmt.Fprintf(stdout, "applied %s ports %s to the running sandbox (profile %s): nothing restarted\n", l.Entry, egress.PortArg(l.Dest.Ports), r.Running)
		}
	}
	switch r.Unapplied {
	case egress.NotAsked:
		fmt.Fprintln(stderr, "agentbox: not applied (--no-apply): agentbox up applies it (it rebuilds and recreates the containers)")
	case egress.NoSandbox:
		fmt.Fprintf(stderr, "agentbox: not applied: %s; agentbox up starts the sandbox with it\n", termsafe.Message(fmt.Sprint(r.Why)))
	case egress.OtherProfile:
		fmt.Fprintf(stderr, "agentbox: not applied: the running sandbox runs profile %s, whose allowlist this edit does not change\n", r.Running)
	}
}
