package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/checkmemo"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/spf13/cobra"
)

type generateOptions struct {
	dir   string
	check bool
}

func newGenerateCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	o := &generateOptions{}
	c := &cobra.Command{
		Use:   "generate",
		Short: "Compile agentbox.yaml into the sandbox's files",
		Long: `Compile agentbox.yaml (and the digests in agentbox.lock) into:

  .agentbox/agent.Dockerfile       the agent image, base pinned by digest
  .agentbox/egress.Dockerfile      the egress (firewall) image
  .agentbox/egress/                each profile's firewall policy: rules.nft, dnsmasq.conf, policy.bash, haproxy.cfg
  .agentbox/egress-program/        the firewall program, the same for every profile: not
                                   committed (the egress Dockerfile pins its sums)
  .agentbox/docker-compose.yml     the egress and agent services
  .devcontainer/devcontainer.json  the Dev Container definition

generate never touches the network. Every file is checked with its
ecosystem's parser before anything is written. Unchanged files are not
touched; stale files agentbox generated before are removed. The writes are
all or nothing: on any failure no file has changed.

With --check nothing is written: the command prints a unified diff of
missing, changed and extra files and exits 3 if there is any. Extra
includes another Dev Container configuration (.devcontainer.json at the
top, or one in .devcontainer/). --check also reads the repository's
.gitattributes: agentbox's block (when agentbox ci github wrote the
workflow) must be as that command writes it, and no line may fold
agentbox.yaml, the workflow or .gitattributes in GitHub's diff.`,
		Example: `  agentbox generate
  agentbox generate -C path/to/project
  agentbox generate --check   # in CI: fail when the generated files are stale`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(c.Context(), stdout, stderr)
		},
	}
	c.Flags().BoolVar(&o.check, "check", false, "write nothing; print a diff and exit 3 when the files are out of date")
	return c
}

func (o *generateOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	c, err := generator.Compile(o.dir, generator.CompileOptions{CheckMounts: true, Memo: checkmemo.Open()})
	if err != nil {
		return err
	}
	files := c.Files
	if o.check {
		return o.checkDrift(stdout, stderr, files)
	}
	changes, err := generator.Write(o.dir, files)
	for _, ch := range changes {
		fmt.Fprintf(stdout, "%-6s %s\n", ch.Kind, esc(ch.Path)) // a stale file's name is the disk's
	}
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		fmt.Fprintln(stderr, "agentbox: generated files are up to date")
	}
	sandbox.WarnStale(ctx, "", o.dir, c.Config.Name, stderr)
	return nil
}

// checkDrift reports generator.Drift: the generated files against the
// disk and the repository's .gitattributes, with exit 3.
func (o *generateOptions) checkDrift(stdout, stderr io.Writer, files map[string][]byte) error {
	diff, repo, err := generator.Drift(o.dir, files)
	if err != nil {
		return err
	}
	if diff == "" && repo == "" {
		fmt.Fprintln(stderr, "agentbox: generated files are up to date")
		return nil
	}
	// The files on disk are anyone's (a pull request's, in CI): their
	// names and lines go through termsafe, backslashes kept (a
	// unified diff's own, and the files').
	fmt.Fprint(stdout, termsafe.Message(diff+repo))
	var msgs []string
	if diff != "" {
		msgs = append(msgs, `generated files are out of date; run "agentbox generate"`)
	}
	if repo != "" {
		msgs = append(msgs, "the repository's "+generator.Gitattributes+" is not as agentbox keeps it (above, paths from the repository's top)")
	}
	return &exitErr{exitDrift, fmt.Errorf("agentbox: %s", strings.Join(msgs, "; "))}
}
