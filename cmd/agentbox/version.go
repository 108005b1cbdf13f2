package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/agentbox-dev/agentbox/internal/buildinfo"
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// `make build` sets it to what `git describe --tags --always --dirty` says,
// the release archives (.goreleaser.yaml) to the tag without its v.
var version = ""

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of agentbox",
		Long: `Print the version of agentbox: the version it was released as, or, for a
build from source, the version control revision it was built from, the
time of that commit and whether the tree had uncommitted changes, as Go
embeds them. agentbox --version prints the same.`,
		Example: `  agentbox version
  agentbox --version`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			fmt.Fprintln(stdout, "agentbox", buildVersion())
			return nil
		},
	}
}

// buildVersion says which agentbox this is (buildinfo.Describe).
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return buildinfo.Describe(version, bi)
}
