package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// runProject is the sandbox of the golden case agent-claude under
// profile, in a copy with a .git directory, on docker answered by a
// FakeRunner.
func runProject(t *testing.T, profile string, answers func(cfg *config.Config, exec func(phase string) string) map[string]any) (*sandbox.Project, *sandbox.FakeRunner) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"agentbox.yaml", "agentbox.lock"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "golden", "agent-claude", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := sandbox.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	prof, _ := cfg.Profile(profile)
	exec := func(phase string) string {
		var b strings.Builder
		b.WriteString("compose -f f.yml -p p exec -T")
		for _, kv := range Env(cfg, prof) {
			b.WriteString(" -e " + kv)
		}
		return b.String() + " agent bash -s -- " + phase
	}
	f := &sandbox.FakeRunner{T: t, Answers: answers(cfg, exec)}
	c := sandbox.Compose{Docker: sandbox.Docker{Path: "docker", Runner: f}, Argv: sandbox.ComposeArgv("docker", "p", "f.yml"),
		Env: func(string) ([]string, error) { return nil, nil }}
	return &sandbox.Project{Dir: dir, Config: cfg, Profile: profile, Compose: c}, f
}

// rows are the lines of every probe that phase expects of cfg's prof.
func rows(cfg *config.Config, prof *config.Profile, phase, result string) string {
	var b strings.Builder
	for _, s := range Table {
		if s.Phase == phase && s.Expected(cfg, prof) {
			fmt.Fprintf(&b, "%s\t%s\t%s\ttried\thappened\n", result, s.Area, s.Name)
		}
	}
	return b.String()
}

// TestRunPhases: under balanced, verify runs the "all" phase, the fetch
// probe, the "write" phase, recreates the agent container, then runs the
// "check" phase; under locked, the "all" phase alone.
func TestRunPhases(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // no record of up: nothing is stale
	const recreate = "compose -f f.yml -p p up -d --force-recreate --no-deps --wait agent"
	p, f := runProject(t, "balanced", func(cfg *config.Config, exec func(string) string) map[string]any {
		prof, _ := cfg.Profile("balanced")
		return map[string]any{
			exec("all"):   rows(cfg, prof, "all", "PASS"),
			exec("write"): "",
			exec("check"): rows(cfg, prof, "check", "PASS"),
			"compose -f f.yml -p p exec -T agent bash -c " + fetchProbeScript + " probe " + cfg.Workspace: errors.New("exit status 1"),
			recreate: "",
		}
	})
	r, err := Run(context.Background(), p, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, line := range f.Ran {
		switch {
		case strings.Contains(line, "bash -s -- "):
			phases = append(phases, line[strings.LastIndex(line, " ")+1:])
		case strings.Contains(line, "bash -c "):
			phases = append(phases, "fetch")
		case line == recreate:
			phases = append(phases, "recreate")
		}
	}
	if want := []string{"all", "fetch", "write", "recreate", "check"}; !slices.Equal(phases, want) {
		t.Errorf("ran %q, want %q", phases, want)
	}
	// The fetch probe could not make its commit: it fails, and so does the
	// report.
	if r.Passed || r.Failed() != 1 || !slices.ContainsFunc(r.Probes, func(p Probe) bool { return p.Probe == "protected paths" && p.Result == "FAIL" }) {
		t.Errorf("report %+v", r)
	}

	p, f = runProject(t, "locked", func(cfg *config.Config, exec func(string) string) map[string]any {
		prof, _ := cfg.Profile("locked")
		return map[string]any{exec("all"): rows(cfg, prof, "all", "PASS")}
	})
	if r, err := Run(context.Background(), p, io.Discard); err != nil || !r.Passed || len(f.Ran) != 1 {
		t.Errorf("locked: %+v %v, ran %q", r, err, f.Ran)
	}
}

// TestRunIncomplete: a phase that misses a probe stops verify with an
// error naming it, before anything is recreated.
func TestRunIncomplete(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	p, f := runProject(t, "balanced", func(cfg *config.Config, exec func(string) string) map[string]any {
		prof, _ := cfg.Profile("balanced")
		all := rows(cfg, prof, "all", "PASS")
		return map[string]any{exec("all"): all[strings.Index(all, "\n")+1:]}
	})
	_, err := Run(context.Background(), p, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "did not report 1 of") || !strings.Contains(err.Error(), "files/host paths") {
		t.Errorf("err = %v", err)
	}
	if len(f.Ran) != 1 {
		t.Errorf("ran %q", f.Ran)
	}
}
