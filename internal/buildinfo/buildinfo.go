// Package buildinfo says which agentbox this is: the version linked in at
// build time, else the module version and the version control stamp Go
// embeds.
package buildinfo

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// semverNoV is a semantic version without its leading v, as goreleaser's
// {{.Version}} gives a tag: 1.2.3, 1.2.3-rc.1.
var semverNoV = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// linked is the version set at link time, with the v that Go's
// module versions (and tags) carry when it was linked in without one.
func linked(v string) string {
	if semverNoV.MatchString(v) {
		return "v" + v
	}
	return v
}

// Describe says which agentbox this is, never a bare "(devel)": the
// version set at link time, else the module's version (`go install
// …@v1.2.3`; a build from a git clone has a pseudo-version), followed by
// the version control revision, its time and whether the tree had
// uncommitted changes when bi holds them. A version set at link time that
// Go also stamped from the clean tree (a release built from its tag) stands
// alone, as go install prints it. bi may be nil.
func Describe(version string, bi *debug.BuildInfo) string {
	v := linked(version)
	if v == "" && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	settings := map[string]string{}
	if bi != nil {
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	if bi != nil && version != "" && v == bi.Main.Version && settings["vcs.modified"] == "false" {
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
