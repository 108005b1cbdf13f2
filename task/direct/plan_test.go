package direct

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/gittest"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// directProject is a work tree with a git database, a submodule's .git file,
// an embedded bare repository, a secret, and one protected directory.
func directProject(t *testing.T) (string, *config.Config) {
	t.Helper()
	dir := t.TempDir()
	for p, c := range map[string]string{
		".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n", ".git/objects/x": "", ".git/refs/x": "",
		"src/main.go": "package main\n", ".env": "TOKEN=1\n", "deploy/.env.prod": "TOKEN=2\n", ".env.example": "TOKEN=\n",
		"vendor/sub/.git": "gitdir: ../../.git/modules/sub\n", "fixtures/bare/HEAD": "x\n", "fixtures/bare/objects/a": "",
		"fixtures/bare/refs/a": "", ".vscode/settings.json": "{}\n", "secrets/key": "k\n",
		"conf/ro/settings": "x\n",
	} {
		gittest.WriteFile(t, filepath.Join(dir, p), []byte(c))
	}
	uid, _ := sandbox.OwnerUID(mustStat(t, dir))
	cfg := &config.Config{UID: uid, Workspace: "/workspace", Hidden: append(slices.Clone(config.DefaultHidden), "secrets"),
		ReadOnly: []string{"docs/adr", "conf/ro"}}
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
	plan, err := NewPlan(cfg, dir, task)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(task); err == nil {
		t.Error("planDirect wrote the task's directory")
	}
	got := map[string]generator.Bind{}
	for _, b := range plan.Binds {
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
		// The parents of read-only mounts, pinned (read-write) so that
		// they cannot be renamed.
		"/workspace/vendor":     {Source: dir + "/vendor"},
		"/workspace/vendor/sub": {Source: dir + "/vendor/sub"},
		"/workspace/fixtures":   {Source: dir + "/fixtures"},
		"/workspace/deploy":     {Source: dir + "/deploy"},
		"/workspace/conf":       {Source: dir + "/conf"},
		"/workspace/conf/ro":    {Source: dir + "/conf/ro", ReadOnly: true},
	} {
		if b, ok := got[target]; !ok || b.Source != want.Source || b.ReadOnly != want.ReadOnly {
			t.Errorf("bind at %s = %+v (present %v), want source %s read-only %v", target, b, ok, want.Source, want.ReadOnly)
		}
	}
	for _, target := range []string{"/workspace/.env.example", "/workspace/src", "/workspace/fixtures/bare/HEAD", "/workspace/.vscode/settings.json"} {
		if _, ok := got[target]; ok {
			t.Errorf("unexpected bind at %s", target)
		}
	}
	if !slices.Contains(plan.State.Placeholders, ".claude") || slices.Contains(plan.State.Placeholders, ".vscode") {
		t.Errorf("placeholders %v", plan.State.Placeholders)
	}
	if got := gitDirPaths(plan.State.GitDirs); !slices.Equal(got, []string{"fixtures/bare", "vendor/sub/.git"}) {
		t.Errorf("git dirs %v", got)
	}
}

// TestPlanDirectRefuses: what direct mode cannot protect is refused.
func TestPlanDirectRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mangle func(t *testing.T, dir string, cfg *config.Config)
		want   string
	}{
		{"no git directory", func(t *testing.T, dir string, _ *config.Config) { os.RemoveAll(filepath.Join(dir, ".git")) }, "top of a git repository"},
		{".git is a file", func(t *testing.T, dir string, _ *config.Config) {
			os.RemoveAll(filepath.Join(dir, ".git"))
			gittest.WriteFile(t, filepath.Join(dir, ".git"), []byte("gitdir: /elsewhere\n"))
		}, "whose .git is a directory"},
		{"not writable by the agent", func(t *testing.T, _ string, cfg *config.Config) { cfg.UID++ }, "does not let the agent"},
		{"protected symlink", func(t *testing.T, dir string, _ *config.Config) {
			os.Symlink("src", filepath.Join(dir, ".claude"))
		}, ".claude is a symlink"},
		{"read-only path through a symlink", func(t *testing.T, dir string, cfg *config.Config) {
			os.Symlink("src", filepath.Join(dir, "docs"))
		}, "docs is a symlink"},
		{"writable inside a protected directory", func(t *testing.T, _ string, cfg *config.Config) {
			cfg.Writable = []string{".vscode/extensions.json"}
		}, "cannot make .vscode/extensions.json writable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, cfg := directProject(t)
			tc.mangle(t, dir, cfg)
			_, err := NewPlan(cfg, dir, t.TempDir())
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
	plan, err := NewPlan(cfg, dir, t.TempDir())
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
		gittest.WriteFile(t, filepath.Join(dir, p), []byte(c))
	}
	d, err := Disarm(dir, &plan.State)
	if err != nil {
		t.Fatal(err)
	}
	got := d.GitDirs
	slices.Sort(got)
	if want := []string{"docs/pager", "evil/.git", "evil/.git/inner", "lib/.git"}; !slices.Equal(got, want) {
		t.Errorf("disarmed %v, want %v", got, want)
	}
	for _, p := range []string{"evil/.git/HEAD" + QuarantineSuffix, "evil/.git/inner/HEAD" + QuarantineSuffix,
		"docs/pager/HEAD" + QuarantineSuffix, "lib/.git" + QuarantineSuffix, "fixtures/bare/HEAD", "vendor/sub/.git"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if again, err := scanWorkTree(dir, nil); err != nil || !slices.Equal(again.gitDirs, plan.State.GitDirs) {
		t.Errorf("git directories after disarming: %v (%v), want only the user's %v", again, err, plan.State.GitDirs)
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

// TestDisarmRenamed: the agent moves a user's git directory away (or its
// parent) and makes its own at the old path: its own is disarmed, the
// user's, moved, is left alone.
func TestDisarmRenamed(t *testing.T) {
	dir, cfg := directProject(t)
	plan, err := NewPlan(cfg, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{"vendor/sub": "vendor/sub.moved", "fixtures": "fixtures.moved"} {
		if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{
		"vendor/sub/.git/HEAD": "ref: refs/heads/main\n", "vendor/sub/.git/objects/a": "", "vendor/sub/.git/refs/a": "",
		"vendor/sub/.git/config": "[core]\n\tfsmonitor = touch /tmp/pwned\n",
		"fixtures/bare/HEAD":     "x\n", "fixtures/bare/objects/a": "", "fixtures/bare/refs/a": "",
	} {
		gittest.WriteFile(t, filepath.Join(dir, p), []byte(c))
	}
	d, err := Disarm(dir, &plan.State)
	if err != nil {
		t.Fatal(err)
	}
	got := d.GitDirs
	slices.Sort(got)
	if want := []string{"fixtures/bare", "vendor/sub/.git"}; !slices.Equal(got, want) {
		t.Errorf("disarmed %v, want %v", got, want)
	}
	for _, p := range []string{"vendor/sub/.git/HEAD" + QuarantineSuffix, "fixtures/bare/HEAD" + QuarantineSuffix,
		"vendor/sub.moved/.git", "fixtures.moved/bare/HEAD"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// deepPath is a relative path longer than the host's PATH_MAX (4,096).
func deepPath() string {
	return strings.Repeat("d123456789/", 420) + "deep"
}

// mkdirDeep makes rel below top, one level at a time (a path this long
// cannot be named whole), and writes files in its last directory.
func mkdirDeep(t *testing.T, top, rel string, files map[string]string) {
	t.Helper()
	r, err := os.OpenRoot(top)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.MkdirAll(rel, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		if err := r.MkdirAll(path.Dir(rel+"/"+p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteFile(rel+"/"+p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDisarmDeep: a git directory nested deeper than PATH_MAX is disarmed
// as any other.
func TestDisarmDeep(t *testing.T) {
	dir, cfg := directProject(t)
	plan, err := NewPlan(cfg, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rel := deepPath()
	mkdirDeep(t, dir, rel, map[string]string{"HEAD": "ref: refs/heads/main\n", "objects/a": "", "refs/a": "",
		"config": "[core]\n\tfsmonitor = touch /tmp/pwned\n"})
	d, err := Disarm(dir, &plan.State)
	if err != nil || !slices.Equal(d.GitDirs, []string{rel}) {
		t.Fatalf("disarmed %d paths (%v), want the deep one", len(d.GitDirs), err)
	}
	r, _ := os.OpenRoot(dir)
	defer r.Close()
	if _, err := r.Lstat(rel + "/HEAD" + QuarantineSuffix); err != nil {
		t.Error(err)
	}
}

func gitDirPaths(ds []pathID) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Path)
	}
	return out
}

// TestDisarmLinks: every link the agent made that leads out of the project
// (absolute, climbing out as written, or through another link) is removed;
// its links inside the project, dangling ones included, and the user's own
// links stay.
func TestDisarmLinks(t *testing.T) {
	dir, cfg := directProject(t)
	for l, target := range map[string]string{"user-out": "/etc", "user-in": "src"} {
		if err := os.Symlink(target, filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := NewPlan(cfg, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for l, target := range map[string]string{
		"layer": "/var/lib/docker/overlay2/x/diff/tmp/evil", "src/up": "../../outside", "src/via": "../user-out/..",
		"src/in": "../vendor", "src/dangling": "../not-yet", "deep/loop": "loop", "lib/.git": "/var/lib/docker/evil.git",
	} {
		p := filepath.Join(dir, l)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Disarm(dir, &plan.State)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(d.Links)
	want := []string{"deep/loop -> loop", "layer -> /var/lib/docker/overlay2/x/diff/tmp/evil", "lib/.git -> /var/lib/docker/evil.git",
		"src/up -> ../../outside", "src/via -> ../user-out/.."}
	if !slices.Equal(d.Links, want) {
		t.Errorf("removed links %q, want %q", d.Links, want)
	}
	for _, l := range []string{"user-out", "user-in", "src/in", "src/dangling"} {
		if _, err := os.Lstat(filepath.Join(dir, l)); err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}
	for _, l := range []string{"layer", "src/up", "src/via", "deep/loop", "lib/.git"} {
		if _, err := os.Lstat(filepath.Join(dir, l)); err == nil {
			t.Errorf("%s is left", l)
		}
	}
}

// TestPlanDirectHooksPath: the hooks directory the user's core.hooksPath
// names inside the work tree is read-only as a protected path is (git runs
// its programs on the host); one outside the work tree is not mounted.
func TestPlanDirectHooksPath(t *testing.T) {
	gittest.Home(t)
	for _, tc := range []struct{ hooks, target string }{
		{".githooks", "/workspace/.githooks"}, {"tools/hooks", "/workspace/tools"}, {"/elsewhere/hooks", ""},
	} {
		t.Run(tc.hooks, func(t *testing.T) {
			dir, cfg := directProject(t)
			gittest.WriteFile(t, filepath.Join(dir, ".git", "config"), []byte("[core]\n\thooksPath = "+tc.hooks+"\n"))
			plan, err := NewPlan(cfg, dir, filepath.Join(t.TempDir(), "task"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range plan.Binds {
				if strings.Contains(b.Target, "hooks") || b.Target == "/workspace/tools" {
					got = append(got, b.Target)
				}
			}
			if tc.target == "" && len(got) > 0 || tc.target != "" && !slices.Equal(got, []string{tc.target}) {
				t.Errorf("binds for core.hooksPath %s: %v, want %q", tc.hooks, got, tc.target)
			}
		})
	}
}
