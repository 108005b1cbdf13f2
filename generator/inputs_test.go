package generator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// The generated files are a function of agentbox.yaml, agentbox.lock and
// agentbox's version alone: not of the checkout's folder name (a clone
// elsewhere, a CI runner's path, a folder whose name has no ASCII letter)
// nor of the state of .git (a directory, a worktree's file, or none yet).
func TestFilesDependOnInputsOnly(t *testing.T) {
	yaml := []byte("agent: claude\n")
	cfg, _, err := config.Decode(config.ConfigFile, yaml, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lock := fakeLock(cfg)
	var want map[string][]byte
	var wantFrom string
	for _, c := range []struct{ folder, git string }{
		{"acme-api", "dir"},
		{"other-checkout", "dir"},
		{"Ünïcödé", "dir"},
		{"日本語", "dir"},
		{"acme-api", "file"},
		{"acme-api", "none"},
	} {
		dir := filepath.Join(t.TempDir(), c.folder)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		switch c.git {
		case "dir":
			os.Mkdir(filepath.Join(dir, ".git"), 0o755)
		case "file":
			os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: /elsewhere/.git/worktrees/x\n"), 0o644)
		}
		os.WriteFile(filepath.Join(dir, config.ConfigFile), yaml, 0o644)
		os.WriteFile(filepath.Join(dir, lockfile.File), lock.Marshal(), 0o644)
		files, err := generate(dir)
		if err != nil {
			t.Fatalf("%s (.git %s): %v", c.folder, c.git, err)
		}
		from := c.folder + " (.git " + c.git + ")"
		if want == nil {
			want, wantFrom = files, from
			continue
		}
		for path, data := range want {
			if string(files[path]) != string(data) {
				t.Errorf("%s differs between %s and %s", path, wantFrom, from)
			}
		}
		if len(files) != len(want) {
			t.Errorf("%d files from %s, %d from %s", len(want), wantFrom, len(files), from)
		}
	}
}
