package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/generator"
)

// directProject is a work tree with a git database, a submodule's .git file,
// an embedded bare repository, a secret, and one protected directory.
func directProject(t *testing.T) (string, *generator.Config) {
	t.Helper()
	dir := t.TempDir()
	for p, c := range map[string]string{
		".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n", ".git/objects/x": "", ".git/refs/x": "",
		"src/main.go": "package main\n", ".env": "TOKEN=1\n", "deploy/.env.prod": "TOKEN=2\n", ".env.example": "TOKEN=\n",
		"vendor/sub/.git": "gitdir: ../../.git/modules/sub\n", "fixtures/bare/HEAD": "x\n", "fixtures/bare/objects/a": "",
		"fixtures/bare/refs/a": "", ".vscode/settings.json": "{}\n", "secrets/key": "k\n",
	} {
		writeFile(t, filepath.Join(dir, p), []byte(c))
	}
	uid, _ := ownerUID(mustStat(t, dir))
	cfg := &generator.Config{UID: uid, Workspace: "/workspace", Hidden: append(slices.Clone(generator.DefaultHidden), "secrets"),
		ReadOnly: []string{"docs/adr"}}
	return dir, cfg
}

func mustStat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// TestPlanDirect: the work tree is mounted read-write, and read-only over
// it: .git (its config masked), every git directory in the tree, every
// protected path (a placeholder where it is missing) and the read-only
// paths; the hidden paths are masked. Nothing is written.
func TestPlanDirect(t *testing.T) {
	dir, cfg := directProject(t)
	task := filepath.Join(t.TempDir(), "task")
	plan, err := planDirect(cfg, dir, task)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(task); err == nil {
		t.Error("planDirect wrote the task's directory")
	}
	got := map[string]generator.Bind{}
	for _, b := range plan.binds {
		if _, dup := got[b.Target]; dup {
			t.Errorf("two binds at %s", b.Target)
		}
		got[b.Target] = b
	}
	empty, emptyFile := filepath.Join(task, "empty"), filepath.Join(task, "empty-file")
	for target, want := range map[string]generator.Bind{
		"/workspace":                  {Source: dir},
		"/workspace/.git":             {Source: dir + "/.git", ReadOnly: true},
		"/workspace/.git/config":      {Source: dir + "/.agentbox/git-config", ReadOnly: true},
		"/workspace/vendor/sub/.git":  {Source: dir + "/vendor/sub/.git", ReadOnly: true},
		"/workspace/fixtures/bare":    {Source: dir + "/fixtures/bare", ReadOnly: true},
		"/workspace/.vscode":          {Source: dir + "/.vscode", ReadOnly: true},
		"/workspace/.claude":          {Source: empty, ReadOnly: true},
		"/workspace/.envrc":           {Source: emptyFile, ReadOnly: true},
		"/workspace/agentbox.yaml":    {Source: emptyFile, ReadOnly: true},
		"/workspace/docs":             {Source: empty, ReadOnly: true}, // docs/adr: its first missing component
		"/workspace/.env":             {Source: emptyFile, ReadOnly: true},
		"/workspace/deploy/.env.prod": {Source: emptyFile, ReadOnly: true},
		"/workspace/secrets":          {Source: empty, ReadOnly: true},
	} {
		if b, ok := got[target]; !ok || b.Source != want.Source || b.ReadOnly != want.ReadOnly {
			t.Errorf("bind at %s = %+v (present %v), want source %s read-only %v", target, b, ok, want.Source, want.ReadOnly)
		}
	}
	for _, target := range []string{"/workspace/.env.example", "/workspace/src", "/workspace/fixtures/bare/HEAD"} {
		if _, ok := got[target]; ok {
			t.Errorf("unexpected bind at %s", target)
		}
	}
	if !slices.Contains(plan.state.Placeholders, ".claude") || slices.Contains(plan.state.Placeholders, ".vscode") {
		t.Errorf("placeholders %v", plan.state.Placeholders)
	}
	if !slices.Equal(plan.state.GitDirs, []string{"fixtures/bare", "vendor/sub/.git"}) {
		t.Errorf("git dirs %v", plan.state.GitDirs)
	}
}

// TestPlanDirectRefuses: what direct mode cannot protect is refused.
func TestPlanDirectRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mangle func(t *testing.T, dir string, cfg *generator.Config)
		want   string
	}{
		{"no git directory", func(t *testing.T, dir string, _ *generator.Config) { os.RemoveAll(filepath.Join(dir, ".git")) }, "top of a git repository"},
		{".git is a file", func(t *testing.T, dir string, _ *generator.Config) {
			os.RemoveAll(filepath.Join(dir, ".git"))
			writeFile(t, filepath.Join(dir, ".git"), []byte("gitdir: /elsewhere\n"))
		}, "whose .git is a directory"},
		{"another owner", func(t *testing.T, _ string, cfg *generator.Config) { cfg.UID++ }, "the agent runs as uid"},
		{"protected symlink", func(t *testing.T, dir string, _ *generator.Config) {
			os.Symlink("src", filepath.Join(dir, ".claude"))
		}, ".claude is a symlink"},
		{"read-only path through a symlink", func(t *testing.T, dir string, cfg *generator.Config) {
			os.Symlink("src", filepath.Join(dir, "docs"))
		}, "docs is a symlink"},
		{"writable inside a protected directory", func(t *testing.T, _ string, cfg *generator.Config) {
			cfg.Writable = []string{".vscode/extensions.json"}
		}, "cannot make .vscode/extensions.json writable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, cfg := directProject(t)
			tc.mangle(t, dir, cfg)
			_, err := planDirect(cfg, dir, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDisarmGitDirs: every git directory the agent made (a .git directory
// or file, a bare repository by any name, one nested in another) loses its
// HEAD; the user's own are left alone.
func TestDisarmGitDirs(t *testing.T) {
	dir, cfg := directProject(t)
	plan, err := planDirect(cfg, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{
		"evil/.git/HEAD": "ref: refs/heads/main\n", "evil/.git/objects/a": "", "evil/.git/refs/a": "",
		"evil/.git/config":     "[core]\n\tfsmonitor = touch /tmp/pwned\n",
		"evil/.git/inner/HEAD": "x\n", "evil/.git/inner/commondir": "..\n",
		"docs/pager/HEAD": "x\n", "docs/pager/objects/a": "", "docs/pager/refs/a": "",
		"lib/.git":            "gitdir: ../evil/.git\n",
		"src/refs/not-a-repo": "", "src/objects/x": "",
	} {
		writeFile(t, filepath.Join(dir, p), []byte(c))
	}
	got, err := disarmGitDirs(dir, plan.state.GitDirs)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"docs/pager", "evil/.git", "evil/.git/inner", "lib/.git"}; !slices.Equal(got, want) {
		t.Errorf("disarmed %v, want %v", got, want)
	}
	for _, p := range []string{"evil/.git/HEAD" + quarantineSuffix, "evil/.git/inner/HEAD" + quarantineSuffix,
		"docs/pager/HEAD" + quarantineSuffix, "lib/.git" + quarantineSuffix, "fixtures/bare/HEAD", "vendor/sub/.git"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if again, _, err := scanWorkTree(dir, nil); err != nil || !slices.Equal(again, plan.state.GitDirs) {
		t.Errorf("git directories after disarming: %v (%v), want only the user's %v", again, err, plan.state.GitDirs)
	}
}

func TestHiddenMatcher(t *testing.T) {
	match := hiddenMatcher([]string{".env", ".env.*", "!.env.example", "config/*.key", "secret?"})
	for rel, want := range map[string]bool{
		".env": true, "a/b/.env": true, ".env.local": true, "x/.env.example": false, "config/a.key": true,
		"config/sub/a.key": true, "other/config/a.key": false, "secret1": true, "secret12": false, "env": false,
	} {
		if got := match(rel); got != want {
			t.Errorf("match(%q) = %v, want %v", rel, got, want)
		}
	}
}
