package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/gittest"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task/direct"
)

// TestCollectDirectFailsClosed: when the work tree cannot be disarmed, no
// git runs in it and the task fails, whatever its agent's exit.
func TestCollectDirectFailsClosed(t *testing.T) {
	gittest.Home(t)
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q")
	gittest.CommitAll(t, dir, map[string]string{"src/main.go": "package main\n"})
	uid, _ := sandbox.OwnerUID(mustStat(t, dir))
	cfg := &config.Config{UID: uid, Workspace: "/workspace"}
	tdir := t.TempDir()
	plan, err := direct.NewPlan(cfg, dir, tdir)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Write(tdir); err != nil {
		t.Fatal(err)
	}
	// A git directory whose HEAD cannot be renamed: a directory of that
	// name is in the way.
	for p, c := range map[string]string{"evil/HEAD": "x\n", "evil/objects/a": "", "evil/refs/a": "",
		"evil/HEAD" + direct.QuarantineSuffix + "/keep": ""} {
		gittest.WriteFile(t, filepath.Join(dir, p), []byte(c))
	}
	sum := &Summary{State: StateExited, ExitCode: 0}
	collectDirect(t.Context(), &Prepared{Dir: tdir, Rec: &Record{Dir: dir}}, sum)
	if sum.ExitCode == 0 || !strings.HasPrefix(sum.BranchStatus, "not disarmed: ") || len(sum.Uncommitted) > 0 {
		t.Errorf("exit %d, status %q, uncommitted %v; want a failure before any git", sum.ExitCode, sum.BranchStatus, sum.Uncommitted)
	}
}

// TestCollectDirect: a direct task's collect disarms the git directory the
// agent made, removes the placeholders left empty, and lists the project's
// changes; the summary has no branch.
func TestCollectDirect(t *testing.T) {
	gittest.Home(t)
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q")
	gittest.CommitAll(t, dir, map[string]string{"src/main.go": "package main\n"})
	uid, _ := sandbox.OwnerUID(mustStat(t, dir))
	cfg := &config.Config{UID: uid, Workspace: "/workspace"}
	tdir := t.TempDir()
	plan, err := direct.NewPlan(cfg, dir, tdir)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Write(tdir); err != nil {
		t.Fatal(err)
	}
	// The mount points Docker made for the missing protected paths.
	if len(plan.State.Placeholders) == 0 {
		t.Fatal("no placeholders planned")
	}
	for _, ph := range plan.State.Placeholders {
		if err := os.MkdirAll(filepath.Join(dir, ph), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gittest.WriteFile(t, filepath.Join(dir, "src/main.go"), []byte("package main // changed\n"))
	gittest.WriteFile(t, filepath.Join(dir, "evil/.git"), []byte("gitdir: /tmp/x\n"))
	sum := &Summary{State: StateExited, Branch: "refs/heads/x"}
	collectDirect(t.Context(), &Prepared{Dir: tdir, Rec: &Record{Dir: dir}}, sum)
	if sum.BranchStatus != WorkspaceDirect || sum.Branch != "" || sum.ExitCode != 0 {
		t.Errorf("status %q, branch %q, exit %d; want direct, none, 0", sum.BranchStatus, sum.Branch, sum.ExitCode)
	}
	if len(sum.Quarantined) != 1 || sum.Quarantined[0] != "evil/.git" {
		t.Errorf("quarantined %v, want evil/.git", sum.Quarantined)
	}
	if got := strings.Join(sum.Uncommitted, "\n"); !strings.Contains(got, "M src/main.go") || !strings.Contains(got, "evil/.git"+direct.QuarantineSuffix) {
		t.Errorf("uncommitted %q", got)
	}
	for _, ph := range plan.State.Placeholders {
		if _, err := os.Lstat(filepath.Join(dir, ph)); err == nil {
			t.Errorf("placeholder %s is left", ph)
		}
	}
}
