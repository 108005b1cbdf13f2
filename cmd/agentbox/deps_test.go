package main

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/bump"
	"github.com/agentbox-dev/agentbox/images/imagestest"
	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// testDeps are the collaborators of a test that names none: registries that
// know no image and no package (a bump fails loudly, naming what it asked
// for, and never reaches a network), and the real sandbox, which the tests
// that fetch replace with a fake docker on PATH.
func testDeps() deps {
	return deps{
		resolver: func(settings.Settings) imageRegistry { return fakeImages{} },
		settings: func() (settings.Settings, error) { return settings.Settings{}, nil },
		npm:      func(string, settings.Settings) npm.Source { return imagestest.NPM{} },
		debian:   func(settings.Settings) bump.DebianArchive { return &imagestest.Debian{} },
		now:      time.Now,
		bundle:   composeBundle,
	}
}

// fakeImages are an image registry from maps.
type fakeImages struct {
	imagestest.Resolver
	imagestest.OSReleases
}

// runArgs runs the CLI in-process with testDeps.
func runArgs(tb testing.TB, args []string, stdout, stderr io.Writer) int {
	return run(tb.Context(), testDeps(), args, stdout, stderr)
}

// runDeps runs the CLI in-process with d, in the test's working directory
// (name the project with -C): such a test can run in parallel.
func runDeps(t *testing.T, d deps, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), d, args, &out, &errb)
	return out.String(), errb.String(), code
}

// bump reads the archive the settings name, in their layout.
func TestRealDebianArchive(t *testing.T) {
	s := settings.Settings{Debian: settings.Debian{Archive: "http://10.0.0.1/debian", Layout: settings.LayoutPlain, Security: "http://10.0.0.1/security"}}
	a, ok := realDeps().debian(s).(*debian.Archive)
	if !ok || a.Base != s.Debian.Archive || a.Layout != debian.LayoutPlain || a.Security != s.Debian.Security {
		t.Errorf("archive %+v", a)
	}
	if a := realDeps().debian(settings.Settings{}).(*debian.Archive); a.Base != lockfile.DebianArchive || a.Layout != "" {
		t.Errorf("default archive %+v", a)
	}
}
