package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of agentbox",
		Example: `  agentbox version`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			fmt.Fprintln(stdout, "agentbox", buildVersion())
			return nil
		},
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
