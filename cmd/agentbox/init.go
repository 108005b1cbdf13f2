package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/shquote"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"github.com/agentbox-dev/agentbox/lockfile"
	"github.com/spf13/cobra"
)

type initOptions struct {
	dir   string
	agent string
	ide   string
	force bool
}

func newInitCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	o := &initOptions{}
	c := &cobra.Command{
		Use:   "init",
		Short: "Write a commented agentbox.yaml",
		Long: `Write a commented agentbox.yaml that shows every key with its default.
init refuses to overwrite an existing file unless --force is given.`,
		Example: `  agentbox init --agent claude
  agentbox init --agent codex --ide none
  agentbox init --agent gemini --force`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(stdout, stderr)
		},
	}
	c.Flags().StringVar(&o.agent, "agent", "none", "the agent: "+yamlpos.Quoted(catalog.AgentNames()))
	c.Flags().StringVar(&o.ide, "ide", config.DefaultIDE, "the IDE of the Dev Container: vscode or none")
	c.Flags().BoolVar(&o.force, "force", false, "overwrite an existing agentbox.yaml")
	_ = c.RegisterFlagCompletionFunc("agent", completeFrom(catalog.AgentNames()))
	_ = c.RegisterFlagCompletionFunc("ide", completeFrom(config.IDEs))
	return c
}

func (o *initOptions) run(stdout, stderr io.Writer) error {
	if _, ok := catalog.LookupAgent(o.agent); !ok {
		return usageErrorf("invalid --agent %q; valid values are %s", o.agent, yamlpos.Quoted(catalog.AgentNames()))
	}
	if !slices.Contains(config.IDEs, o.ide) {
		return usageErrorf("invalid --ide %q; valid values are %s", o.ide, yamlpos.Quoted(config.IDEs))
	}
	path, err := generator.WriteInit(o.dir, o.agent, o.ide, o.force)
	if err != nil {
		return err
	}
	bump := "agentbox bump"
	if o.dir != "." {
		bump += " -C " + shquote.Word(o.dir)
	}
	fmt.Fprintf(stderr, "agentbox: wrote %s; next: %s (pins the images and the agent's version in %s, and generates the sandbox's files)\n", path, bump, lockfile.File)
	return nil
}
