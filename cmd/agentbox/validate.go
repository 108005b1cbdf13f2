package main

import (
	"fmt"
	"io"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/review"
	"github.com/spf13/cobra"
)

func newValidateCmd(dir *string, stdout, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "validate",
		Short: "Check agentbox.yaml without generating anything",
		Long: `Load and validate agentbox.yaml. Every problem is reported with its
file:line:column, and all problems of the file in one run. Every path the
sandbox would mount must stay inside the project, with no symbolic link on
its way. A domain that is a public suffix (github.io, co.uk,
s3.amazonaws.com: anyone can publish below it) is a warning.`,
		Example: `  agentbox validate
  agentbox validate -C path/to/project`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			compiled, err := generator.Compile(*dir, generator.CompileOptions{Until: generator.Loaded, CheckMounts: true})
			if err != nil {
				return err
			}
			for _, w := range review.PublicSuffixWarnings(compiled) {
				fmt.Fprintf(stderr, "agentbox: warning: %s\n", esc(w))
			}
			fmt.Fprintln(stderr, "agentbox: agentbox.yaml is valid")
			return nil
		},
	}
	return c
}
