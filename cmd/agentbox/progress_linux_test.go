package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/progress"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
)

// progressLine matches any of agentbox's own progress lines: a step that
// starts ("…") or ends ("(1.2s)"), or an image reference of bump.
var progressLine = regexp.MustCompile(`(?m)^agentbox: .*(…|\(\d[\dms.]*\))$|^  \S+ -> sha256:`)

// checkProgress checks that out has a line matching each of want, in
// order.
func checkProgress(t *testing.T, what, out string, want []string) {
	t.Helper()
	rest := out
	for _, w := range want {
		loc := regexp.MustCompile(`(?m)^` + w + `$`).FindStringIndex(rest)
		if loc == nil {
			t.Errorf("%s: no line %q (in order) in:\n%s", what, w, out)
			return
		}
		rest = rest[loc[1]:]
	}
}

// checkQuiet checks that out has none of agentbox's progress lines.
func checkQuiet(t *testing.T, what, out string) {
	t.Helper()
	if l := progressLine.FindString(out); l != "" {
		t.Errorf("%s: progress line %q in:\n%s", what, l, out)
	}
}

const took = `\(\d[\dms.]*\)`

// TestProgressBump: bump's steps on a terminal (the image references, the
// npm tree, Debian's releases, snapshot and packages); none without a
// terminal or with --quiet.
func TestProgressBump(t *testing.T) {
	h := newFakeHub(t)
	h.push("node:24-bookworm-slim", "node-1", true)
	h.push("debian:bookworm-slim", "debian-1", true)
	dir := bumpProject(t, "agent: claude\n", "")

	term := newFakeTerminal(t)
	var stdout bytes.Buffer
	if code := run(t.Context(), h.deps(), []string{"bump", "-C", dir}, &stdout, term.term); code != exitOK {
		t.Fatalf("bump: exit %d: %s", code, term.output())
	}
	out := term.output()
	for _, lines := range [][]string{
		{`  node:24-bookworm-slim -> sha256:[0-9a-f]{12}`},
		{`  debian:bookworm-slim -> sha256:[0-9a-f]{12}`},
		{`agentbox: npm: resolving @anthropic-ai/claude-code and its dependency tree…`,
			`agentbox: npm: @anthropic-ai/claude-code@\S+, a tree of \d+ packages ` + took},
		{`agentbox: Debian: reading the images' os-release…`,
			`agentbox: Debian: the images run bookworm ` + took,
			`agentbox: Debian: finding the archive's latest snapshot…`,
			`agentbox: Debian: snapshot \S+ ` + took},
		{`agentbox: Debian bookworm/amd64: resolving \d+ packages and their dependencies…`,
			`agentbox: Debian bookworm/amd64: \d+ packages and their dependencies pinned ` + took},
		{`agentbox: Debian bookworm/arm64: resolving \d+ packages and their dependencies…`,
			`agentbox: Debian bookworm/arm64: \d+ packages and their dependencies pinned ` + took},
	} {
		checkProgress(t, "bump on a terminal", out, lines)
	}

	for _, tt := range []struct {
		name string
		args []string
		term bool
	}{
		{"no terminal", []string{"bump", "-C", dir}, false},
		{"--quiet", []string{"bump", "--quiet", "-C", dir}, true},
		{"-q", []string{"-q", "bump", "-C", dir}, true},
	} {
		var stderr bytes.Buffer
		var w io.Writer = &stderr
		var ft *fakeTerminal
		if tt.term {
			ft = newFakeTerminal(t)
			w = ft.term
		}
		code := run(t.Context(), h.deps(), tt.args, &stdout, w)
		got := stderr.String()
		if ft != nil {
			got = ft.output()
		}
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", tt.name, code, got)
		}
		checkQuiet(t, tt.name, got)
	}
}

// TestProgressUp: up says that it builds (and that the first build takes
// minutes), then that it starts, each with its time, on a terminal only.
func TestProgressUp(t *testing.T) {
	dir := project(t, "agent-claude")
	fakeDocker(t, "ok")
	t.Chdir(dir)
	term := newFakeTerminal(t)
	var stdout bytes.Buffer
	if code := run(t.Context(), testDeps(), []string{"up"}, &stdout, term.term); code != exitOK {
		t.Fatalf("up: exit %d: %s", code, term.output())
	}
	checkProgress(t, "up on a terminal", term.output(), []string{
		`agentbox: building the sandbox's images \(the first build takes minutes\)…`,
		`agentbox: the images are built ` + took,
		`agentbox: starting the sandbox \(profile balanced; the agent starts once the firewall is up\)…`,
		`agentbox: the sandbox is up \(profile balanced\) ` + took,
	})
	var stderr bytes.Buffer
	if code := run(t.Context(), testDeps(), []string{"up"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("up: exit %d: %s", code, stderr.String())
	}
	checkQuiet(t, "up without a terminal", stderr.String())
	term = newFakeTerminal(t)
	if code := run(t.Context(), testDeps(), []string{"up", "-q"}, &stdout, term.term); code != exitOK {
		t.Fatalf("up -q: exit %d", code)
	}
	checkQuiet(t, "up -q", term.output())
}

// TestProgressRunBuild: run's build of images that are missing, on a
// terminal only.
func TestProgressRunBuild(t *testing.T) {
	dir := project(t, "agent-claude")
	fakeDocker(t, "ok") // docker image inspect prints nothing: no image
	c, err := generator.Compile(dir, generator.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := sandbox.Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	p := &task.Prepared{Rec: &task.Record{Dir: dir}, Cfg: c.Config, Docker: d,
		Main: sandbox.ProjectArgv(d.Path, dir, c.Config, c.Config.DefaultProfile)}
	quiet := false
	term := newFakeTerminal(t)
	if err := (&task.Compose{P: p, Prog: progress.New(term.term, &quiet), Stderr: term.term}).EnsureImages(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkProgress(t, "run on a terminal", term.output(), []string{
		`agentbox: building the sandbox's images \(the first build takes minutes\)…`,
		`agentbox: the images are built ` + took,
	})
	var stderr bytes.Buffer
	if err := (&task.Compose{P: p, Prog: progress.New(&stderr, &quiet), Stderr: &stderr}).EnsureImages(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkQuiet(t, "run without a terminal", stderr.String())
	if strings.Contains(stderr.String(), "building") {
		t.Errorf("run without a terminal: %q", stderr.String())
	}
}
