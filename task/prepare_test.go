package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/gittest"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
)

// TestJobName: a Job name is a label value, 63 characters at most.
func TestJobName(t *testing.T) {
	if n, err := JobName("acme", "fix-1"); err != nil || n != "acme-task-fix-1" {
		t.Errorf("%q %v", n, err)
	}
	if _, err := JobName(strings.Repeat("a", 20), strings.Repeat("b", 40)); err == nil {
		t.Error("a 66-character Job name was accepted")
	}
}

// TestPrepareOnCluster: a task for a cluster is prepared without Docker:
// its directory holds a bundle of its branch at --ref (HEAD on it) and its
// record, with the Job's name and the namespace of agentbox.yaml; the
// project's repository is not touched. A second task of that name, or a
// branch of its name, is refused before anything is made.
func TestPrepareOnCluster(t *testing.T) {
	gittest.Home(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	bin := t.TempDir()
	gittest.WriteFile(t, filepath.Join(bin, "kubectl"), []byte("#!/bin/sh\nexit 1\n"))
	if err := os.Chmod(filepath.Join(bin, "kubectl"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q")
	gittest.CommitAll(t, dir, map[string]string{"a.txt": "a\n"})
	base := gittest.Git(t, dir, "rev-parse", "HEAD")
	gittest.CommitAll(t, dir, map[string]string{"b.txt": "b\n"})
	c := &generator.Compiled{Config: &config.Config{Name: "acme", Kubernetes: &config.Kubernetes{Namespace: "agents"}}}
	o := Options{Dir: dir, Name: "t1", Ref: "HEAD~1", Argv: []string{"true"}, Timeout: time.Minute, Workspace: WorkspaceClone, On: OnKubernetes}
	p, err := Prepare(t.Context(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rec.Job != "acme-task-t1" || p.Rec.KubeNamespace != "agents" || p.Rec.Base != base || p.Rec.Branch != "agentbox/t1" ||
		p.Kubectl != filepath.Join(bin, "kubectl") || p.Rec.Deadline.Before(p.Rec.Started.Add(time.Minute)) {
		t.Errorf("prepared %+v, kubectl %s", p.Rec, p.Kubectl)
	}
	heads := gittest.Git(t, dir, "bundle", "list-heads", filepath.Join(p.Dir, "task.bundle"))
	if want := base + " HEAD\n" + base + " refs/heads/agentbox/t1"; heads != want {
		t.Errorf("the bundle's heads:\n%s\nwant\n%s", heads, want)
	}
	if r, err := Read("acme", "t1"); err != nil || r.Job != p.Rec.Job {
		t.Errorf("record %+v, %v", r, err)
	}
	if out := gittest.Git(t, dir, "branch", "--list", "agentbox/*"); out != "" {
		t.Errorf("the project has branches %q", out)
	}
	if _, err := Prepare(t.Context(), c, o); err == nil || !strings.Contains(err.Error(), "task t1 exists") {
		t.Errorf("a second t1: %v", err)
	}
	gittest.Git(t, dir, "branch", "agentbox/t2")
	o.Name = "t2"
	if _, err := Prepare(t.Context(), c, o); err == nil || !strings.Contains(err.Error(), "branch agentbox/t2 exists") {
		t.Errorf("t2 whose branch exists: %v", err)
	}
	if d, _ := Dir("acme", "t2"); mustNotExist(d) != nil {
		t.Errorf("the refused task left %s", d)
	}
}

func mustNotExist(p string) error {
	if _, err := os.Lstat(p); err == nil {
		return os.ErrExist
	}
	return nil
}
