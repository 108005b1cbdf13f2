package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	const rev = "1f5b8dd0c991a23aa340ed5846935f052b7f3ca0"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{
			{Key: "-compiler", Value: "gc"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-11-22T16:06:21Z"},
			{Key: "vcs.modified", Value: modified},
		}
	}
	for _, tt := range []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"go install of a release", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"source build, clean", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261122160621-1f5b8dd0c991"}, Settings: vcs("false")},
			"v0.0.0-20261122160621-1f5b8dd0c991 (git " + rev + ", 2026-11-22T16:06:21Z, clean)"},
		{"source build, modified", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261122160621-1f5b8dd0c991+dirty"}, Settings: vcs("true")},
			"v0.0.0-20261122160621-1f5b8dd0c991+dirty (git " + rev + ", 2026-11-22T16:06:21Z, with uncommitted changes)"},
		{"source build, (devel) with revision", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			"built from source (git " + rev + ", 2026-11-22T16:06:21Z, with uncommitted changes)"},
		{"source build, nothing embedded", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"built from source, without version control information (built outside a git clone, in a git worktree, or with -buildvcs=false)"},
		{"no build information", "", nil,
			"built from source, without version control information (built outside a git clone, in a git worktree, or with -buildvcs=false)"},
		{"set at link time", "f7f09ad-dirty", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "f7f09ad-dirty"},
		{"set at link time, and revision", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
			"v1.2.3 (git " + rev + ", 2026-11-22T16:06:21Z, clean)"},
		// goreleaser links its {{.Version}}, the tag without its v: a release
		// says v1.2.3, as go install …@v1.2.3 does.
		{"release archive", "1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "v1.2.3"},
		{"release archive, prerelease", "1.2.3-rc.1", nil, "v1.2.3-rc.1"},
		// Built from the clean tagged clone, Go stamps the same version: the
		// tag names the revision, so the release says no more than go install.
		{"release archive, stamped by go", "1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("false")}, "v1.2.3"},
		{"make build on a clean tag", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("false")}, "v1.2.3"},
		{"make build on a tag, modified", "v1.2.3-dirty", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3+dirty"}, Settings: vcs("true")},
			"v1.2.3-dirty (git " + rev + ", 2026-11-22T16:06:21Z, with uncommitted changes)"},
		{"snapshot archive", "0.0.0-SNAPSHOT-1f5b8dd", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261122160621-1f5b8dd0c991"}, Settings: vcs("false")},
			"v0.0.0-SNAPSHOT-1f5b8dd (git " + rev + ", 2026-11-22T16:06:21Z, clean)"},
		// git describe --always names a commit by a hexadecimal prefix, which
		// may be all digits: not a version, no v added.
		{"set at link time, revision of digits", "1234567", nil, "1234567"},
		{"set at link time, revision of digits, modified", "1234567-dirty", nil, "1234567-dirty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Describe(tt.linked, tt.bi); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
