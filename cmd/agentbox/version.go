package main

import (
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// `make build` sets it to what `git describe --tags --always --dirty` says,
// the release archives (.goreleaser.yaml) to the tag without its v.
var version = ""

// semverNoV is a semantic version without its leading v, as goreleaser's
// {{.Version}} gives a tag: 1.2.3, 1.2.3-rc.1.
var semverNoV = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// linkedVersion is the version set at link time, with the v that Go's
// module versions (and tags) carry when it was linked in without one.
func linkedVersion(linked string) string {
	if semverNoV.MatchString(linked) {
		return "v" + linked
	}
	return linked
}

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

func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return formatVersion(version, bi)
}

// formatVersion says which agentbox this is, never a bare "(devel)": the
// version set at link time, else the module's version (`go install
// …@v1.2.3`; a build from a git clone has a pseudo-version), followed by
// the version control revision, its time and whether the tree had
// uncommitted changes when bi holds them. A version set at link time that
// Go also stamped from the clean tree (a release built from its tag) stands
// alone, as go install prints it. bi may be nil.
func formatVersion(linked string, bi *debug.BuildInfo) string {
	v := linkedVersion(linked)
	if v == "" && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	settings := map[string]string{}
	if bi != nil {
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	if bi != nil && linked != "" && v == bi.Main.Version && settings["vcs.modified"] == "false" {
		// Go stamped the version linked in from the clean tagged tree: the
		// tag names the revision, and the release says what go install says.
		return v
	}
	var vcs []string
	if rev := settings["vcs.revision"]; rev != "" {
		vcs = append(vcs, strings.TrimSpace(settings["vcs"]+" "+rev))
		if t := settings["vcs.time"]; t != "" {
			vcs = append(vcs, t)
		}
		switch settings["vcs.modified"] {
		case "true":
			vcs = append(vcs, "with uncommitted changes")
		case "false":
			vcs = append(vcs, "clean")
		}
	}
	switch {
	case v != "" && vcs != nil:
		return v + " (" + strings.Join(vcs, ", ") + ")"
	case v != "":
		return v
	case vcs != nil:
		return "built from source (" + strings.Join(vcs, ", ") + ")"
	}
	return "built from source, without version control information (built outside a git clone, in a git worktree, or with -buildvcs=false)"
}
