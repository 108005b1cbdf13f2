package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/bump"
	"github.com/agentbox-dev/agentbox/images/imagestest"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// testDeps are the collaborators of a test that names none: registries that
// know no image and no package (a bump fails loudly, naming what it asked
// for, and never reaches a network), and the real sandbox, which the tests
// that fetch replace with a fake docker on PATH.
func testDeps() deps {
	return deps{
		resolver: func(context.Context, settings.Settings) bump.Registry { return fakeImages{} },
		settings: func() (settings.Settings, error) { return settings.Settings{}, nil },
		npm:      func(string, settings.Settings) npm.Source { return imagestest.NPM{} },
		debian:   func(settings.Settings) bump.DebianArchive { return &imagestest.Debian{} },
		now:      time.Now,
		bundle:   sandbox.BundleBranches,
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

// bump's resolver asks the Docker daemon for its mirrors within the
// command's context: a daemon that does not answer holds a canceled bump
// no longer.
func TestResolverStopsWithContext(t *testing.T) {
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "docker"), []byte("#!/bin/sh\nexec sleep 30\n"))
	if err := os.Chmod(filepath.Join(bin, "docker"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	realDeps().resolver(ctx, settings.Settings{})
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the resolver waited %s for docker info after the command's context ended", d)
	}
}
