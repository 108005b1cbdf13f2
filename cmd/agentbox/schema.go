package main

import (
	"fmt"
	"io"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/spf13/cobra"
)

func newSchemaCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of agentbox.yaml",
		Long: `Print the JSON Schema (draft 2020-12) of agentbox.yaml on stdout, for
editors to complete keys, show their documentation and flag mistakes as you
type. The agentbox repository holds the same schema in
schema/agentbox.schema.json.

The schema is a help, not the authority: agentbox validate checks more than a
schema can express (domains, CIDRs, image references, memory sizes), and a
file the schema accepts may still be rejected there.`,
		Example: `  agentbox schema > agentbox.schema.json

  # then, as the first line of agentbox.yaml (YAML language server):
  # yaml-language-server: $schema=agentbox.schema.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if _, err := stdout.Write(config.JSONSchema()); err != nil {
				return fmt.Errorf("writing the schema: %w", err)
			}
			return nil
		},
	}
}
