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
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/agentbox-dev/agentbox/sandbox"
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
			if len(args) == 0 {
				return usageErrorf("name what to add: agentbox policy add NAME... [--ports PORT[,PORT]]")
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
		c.Args = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("name what to remove: agentbox policy remove NAME...")
			}
			return nil
		}
	} else {
		c.Flags().StringVar(&o.ports, "ports", "", "TCP ports, such as 443 or 22,443 (default: network.ports, else 443)")
	}
	c.Flags().StringVar(&o.profile, "profile", "", "the profile whose allowlist to edit (default: the one the sandbox runs, else profile: in agentbox.yaml)")
	_ = c.RegisterFlagCompletionFunc("profile", completeProfiles(dir))
	c.Flags().BoolVar(&o.noApply, "no-apply", false, "edit agentbox.yaml and regenerate only; leave the running sandbox as it is")
	return c
}

// policyEdit is what one run of policy add or remove did.
type policyEdit struct {
	*generator.PolicyEdit
	before string // sandbox.FilesHash before the write ("" if unknown)
}

func (o *policyOptions) run(ctx context.Context, d deps, args []string, stdout, stderr io.Writer) error {
	entries, err := o.parse(args)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(o.dir)
	if err != nil {
		return err
	}
	running, why := "", error(nil)
	if d.profile != nil && (!o.noApply || o.profile == "") { // the running profile chooses the list
		running, why = d.profile(ctx, o.dir, "")
	}
	profile := o.profile
	switch {
	case profile != "":
		if _, ok := cfg.Profile(profile); !ok {
			return usageErrorf("--profile: %v", config.ProfileError(cfg, profile))
		}
	case running != "":
		profile = running
	default:
		profile = cfg.DefaultProfile
	}
	ed, err := o.edit(cfg, profile, entries, stdout, stderr)
	if err != nil || len(ed.Changed) == 0 {
		return err
	}
	switch {
	case o.noApply:
		fmt.Fprintln(stderr, "agentbox: not applied (--no-apply): agentbox up applies it (it rebuilds and recreates the containers)")
		return nil
	case running == "":
		fmt.Fprintf(stderr, "agentbox: not applied: %s; agentbox up starts the sandbox with it\n", termsafe.Message(fmt.Sprint(why)))
		return nil
	case !config.PolicyUses(ed.Config, running, ed.Section):
		fmt.Fprintf(stderr, "agentbox: not applied: the running sandbox runs profile %s, whose allowlist this edit does not change\n", running)
		return nil
	}
	if o.remove {
		return o.applyRemove(ctx, d, ed, running, stdout, stderr)
	}
	return o.applyAdd(ctx, d, ed, running, stdout)
}

// parse reads the entries and --ports.
func (o *policyOptions) parse(args []string) ([]config.PolicyEntry, error) {
	var ports []uint16
	if o.ports != "" {
		var err error
		if ports, err = egress.ParsePorts(o.ports); err != nil {
			return nil, usageErrorf("invalid --ports %q: %v", o.ports, err)
		}
	}
	var out []config.PolicyEntry
	for _, a := range args {
		e, err := config.ParsePolicyEntry(a, ports)
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		out = append(out, e)
	}
	return out, nil
}

// edit edits agentbox.yaml, compiles it, and writes it with the files, all
// or nothing (generator.EditPolicy).
func (o *policyOptions) edit(cfg *config.Config, profile string, entries []config.PolicyEntry, stdout, stderr io.Writer) (*policyEdit, error) {
	before, _ := sandbox.FilesHash(o.dir)
	ed, err := generator.EditPolicy(o.dir, cfg, profile, entries, o.remove)
	for _, e := range ed.Already {
		fmt.Fprintf(stderr, "agentbox: %s is in the allowlist already\n", e)
	}
	for _, ch := range ed.Files {
		fmt.Fprintf(stdout, "%-6s %s\n", ch.Kind, esc(ch.Path)) // a stale file's name is the disk's
	}
	return &policyEdit{ed, before}, err
}

// applyAdd adds the entries to the running egress's live sets, without an
// end, and records them.
func (o *policyOptions) applyAdd(ctx context.Context, d deps, ed *policyEdit, running string, stdout io.Writer) error {
	p := egressProject(d, o.dir, ed.Config)
	for _, e := range ed.Changed {
		dst := egress.PolicyDest(e, config.PolicyPorts(ed.Config, running, e))
		if err := p.AddLive(ctx, dst); err != nil {
			return fmt.Errorf("applying %s to the running sandbox: %w (agentbox.yaml has it: agentbox up applies it, recreating the containers)", e, err)
		}
		fmt.Fprintf(stdout, "applied %s ports %s to the running sandbox (profile %s): nothing restarted\n", e, egress.PortArg(dst.Ports), running)
	}
	return sandbox.RecordLive(o.dir, ed.Config.Name, ed.before)
}

// applyRemove takes the entries out of the running sandbox: live when
// policy add put them there since it started (the egress lists them), else
// by agentbox up.
func (o *policyOptions) applyRemove(ctx context.Context, d deps, ed *policyEdit, running string, stdout, stderr io.Writer) error {
	p := egressProject(d, o.dir, ed.Config)
	live, err := p.Live(ctx)
	if err != nil {
		return fmt.Errorf("listing what the running sandbox was given live: %w (agentbox.yaml no longer has it: agentbox up applies that, recreating the containers)", err)
	}
	var baked []string
	for _, e := range ed.Changed {
		dst := egress.PolicyDest(e, config.PolicyPorts(ed.Config, running, e))
		if !live.All(dst) {
			baked = append(baked, e.String())
			continue
		}
		if err := p.RemoveLive(ctx, dst); err != nil {
			return fmt.Errorf("removing %s from the running sandbox: %w (agentbox.yaml no longer has it: agentbox up applies that)", e, err)
		}
		fmt.Fprintf(stdout, "removed %s ports %s from the running sandbox: nothing restarted\n", e, egress.PortArg(dst.Ports))
	}
	if len(baked) == 0 {
		return sandbox.RecordLive(o.dir, ed.Config.Name, ed.before)
	}
	fmt.Fprintf(stderr, "agentbox: %s: in the running egress image, which cannot drop it live; restarting the sandbox (agentbox up --profile %s): the egress and agent containers are recreated and the agent's processes restart; its volumes (state, workspace) stay\n",
		strings.Join(baked, ", "), running)
	if d.up == nil {
		return errors.New("agentbox up is not available here")
	}
	return d.up(ctx, o.dir, running, stdout, stderr)
}
