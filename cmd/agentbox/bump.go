package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/agentbox-dev/agentbox/bump"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/progress"
	"github.com/spf13/cobra"
)

type bumpOptions struct {
	dir    string
	check  bool
	accept []string
	json   bool
	deps   deps
	prog   *progress.Progress
}

func newBumpCmd(dir *string, d deps, prog *progress.Progress, stdout, stderr io.Writer) *cobra.Command {
	o := &bumpOptions{deps: d, prog: prog}
	c := &cobra.Command{
		Use:   "bump",
		Short: "Re-pin every image digest, the agent CLI's npm tree and the Debian packages, then regenerate",
		Long: `Resolve every image tag of agentbox.yaml to the digest it points to now (the
multi-arch index digest, through the registry API: HEAD first, so no pull
quota is spent; credentials from the Docker config and its credential
helpers); the agent CLI to the npm registry's "latest" version and its whole
dependency tree, each package with its tarball's integrity (the registry
follows npm's configuration: NPM_CONFIG_REGISTRY or registry= in .npmrc);
and every Debian package the images install to its version in the latest
snapshot of Debian's archive, for amd64 and arm64 (your agentbox settings,
~/.config/agentbox/settings.yaml, may name a copy of it or a plain mirror,
whose current versions are then pinned). Then rewrite agentbox.lock and
regenerate. The Debian snapshot stays as it was while no pinned version and
no dependency of theirs changed.

All references resolve concurrently. Nothing is written unless every
reference resolved and the sandbox rendered; the lock and the files are
then written together, all or nothing. An image pinned with a digest in
agentbox.yaml is checked and left as written.

stdout gets a table of what changed (--json: every reference, for bots);
stderr gets progress lines when it is a terminal (not with --quiet): one
per image reference, and the steps of the npm tree and of Debian's packages.
With --check nothing is written and the exit code is 3 when something
would change.

A package of the agent CLI's tree whose tarball changed under a version
agentbox.lock already pins (another integrity: npm's registry never
republishes a version, so a registry, mirror or cache serves other code)
fails the bump, naming both integrities, unless --accept-changed-tarball
NAME@VERSION names it; agentbox diff then shows it as a risk.`,
		Example: `  agentbox bump
  agentbox bump --check          # in CI: exit 3 when a digest, the CLI's tree or a Debian package moved
  agentbox bump --json > bump.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(c.Context(), stdout, stderr)
		},
	}
	c.Flags().BoolVar(&o.check, "check", false, "resolve and report, write nothing; exit 3 when something would change")
	c.Flags().BoolVar(&o.json, "json", false, "print the result as JSON")
	c.Flags().StringArrayVar(&o.accept, "accept-changed-tarball", nil, "record NAME@VERSION although the registry's tarball for it changed since agentbox.lock pinned it (another integrity under the same version); repeatable")
	return c
}

func (o *bumpOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	us, err := o.deps.settings()
	if err != nil {
		return err
	}
	reg := o.deps.resolver(ctx, us)
	deps := bump.Options{Resolver: reg, OS: reg, NPM: o.deps.npm(o.dir, us),
		Debian: o.deps.debian(us), Now: o.deps.now, AcceptChangedTarball: o.accept}
	if o.prog.On() {
		deps.Progress = func(ref images.Ref, digest string, err error) {
			if err != nil {
				o.prog.Printf("  %s: failed", ref)
				return
			}
			o.prog.Printf("  %s -> %s", ref.Tagged(), bump.ShortDigest(digest))
		}
		deps.Step = o.prog.Step
	}
	res, err := bump.Run(ctx, o.dir, deps)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("agentbox: bump interrupted (%v); nothing was written", context.Cause(ctx))
	}
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "agentbox: warning: %s\n", w)
	}
	if o.json {
		if err := writeJSON(stdout, res); err != nil {
			return err
		}
	} else {
		printBumpTable(stdout, res)
	}
	switch {
	case o.check && res.Changed:
		return &exitErr{exitDrift, fmt.Errorf("agentbox: newer digests or versions exist; run \"agentbox bump\"")}
	case o.check:
		fmt.Fprintln(stderr, "agentbox: every image, the agent CLI's tree and the Debian packages are current")
		return nil
	}
	changes, err := bump.Write(o.dir, res)
	for _, ch := range changes {
		fmt.Fprintf(stderr, "%-6s %s\n", ch.Kind, esc(ch.Path))
	}
	if err == nil && !res.Changed {
		fmt.Fprintln(stderr, "agentbox: every image, the agent CLI's tree and the Debian packages are current")
	}
	return err
}

// printBumpTable prints the references and packages that changed.
func printBumpTable(w io.Writer, res *bump.Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := false
	for _, c := range res.Images {
		if !c.Changed {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "IMAGE\tOLD\tNEW")
			header = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Reference, orNone(bump.ShortDigest(c.Old)), bump.ShortDigest(c.New))
	}
	header = false
	for _, c := range res.Packages {
		if !c.Changed && c.TreeChanged == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "PACKAGE\tOLD\tNEW")
			header = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s (%s)\n", c.Package, orNone(c.Old), c.New, c.TreeNote())
	}
	header = false
	for _, c := range res.Debian {
		if !c.Changed {
			continue
		}
		if !header {
			fmt.Fprintf(tw, "DEBIAN (snapshot %s)\tOLD\tNEW\n", res.Snapshot)
			header = true
		}
		old, cur := c.Short()
		fmt.Fprintf(tw, "%s/%s %s\t%s\t%s\n", c.Release, c.Arch, c.Package, orNone(old), orNone(cur))
	}
	tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
