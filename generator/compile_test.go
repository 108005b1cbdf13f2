package generator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// linkedProject copies the golden case agent-none into a directory whose
// .git is a link out of the project.
func linkedProject(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{config.ConfigFile, lockfile.File} {
		data, err := os.ReadFile(filepath.Join(goldenDir, "agent-none", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("..", filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCompileOptions(t *testing.T) {
	golden := filepath.Join(goldenDir, "agent-none")
	lock, err := os.ReadFile(filepath.Join(golden, lockfile.File))
	if err != nil {
		t.Fatal(err)
	}
	yml, err := os.ReadFile(filepath.Join(golden, config.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	badLock := filepath.Join(goldenDir, "fail-bad-lock")
	cases := []struct {
		name    string
		dir     string
		o       CompileOptions
		files   bool   // Files rendered
		planned bool   // Explain works
		err     string // "" for none
	}{
		{"checked", golden, CompileOptions{}, true, true, ""},
		{"planned", golden, CompileOptions{Until: Planned}, false, true, ""},
		{"loaded", golden, CompileOptions{Until: Loaded}, false, false, ""},
		{"source in memory", "does-not-exist", CompileOptions{Source: &Source{File: config.ConfigFile, Config: yml, Lock: lock}}, true, true, ""},
		{"source without lock", "does-not-exist", CompileOptions{Source: &Source{File: config.ConfigFile, Config: yml}}, false, false, "agentbox.lock does not exist"},
		{"source without lock, loaded", "does-not-exist", CompileOptions{Until: Loaded, Source: &Source{File: config.ConfigFile, Config: yml}}, false, false, ""},
		{"lock replaced", golden, CompileOptions{Lock: &lockfile.Lock{}}, false, false, "is not pinned in agentbox.lock"},
		{"mounts unchecked", linkedProject(t), CompileOptions{}, true, true, ""},
		{"mounts checked", linkedProject(t), CompileOptions{CheckMounts: true}, false, false, "leads outside the project"},
		{"mounts checked, loaded", linkedProject(t), CompileOptions{Until: Loaded, CheckMounts: true}, false, false, "leads outside the project"},
		{"no project", t.TempDir(), CompileOptions{}, false, false, "no such file"},
		{"bad lock", badLock, CompileOptions{Until: Planned}, false, false, "agentbox.lock:"},
		{"bad lock, loaded", badLock, CompileOptions{Until: Loaded}, false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Compile(c.dir, c.o)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Compile = %v, want an error containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Config == nil {
				t.Error("no Config")
			}
			if (len(got.Files) > 0) != c.files {
				t.Errorf("%d files, want files: %v", len(got.Files), c.files)
			}
			p := got.Plan()
			if (p != nil) != c.planned || (p != nil && p.Agent.Name != "none") {
				t.Errorf("Plan = %v; want a plan: %v", p, c.planned)
			}
		})
	}
}

// TestCompileFromSourceMatchesDisk: agentbox.yaml and agentbox.lock held
// in memory compile to the same files as on disk.
func TestCompileFromSourceMatchesDisk(t *testing.T) {
	for _, dir := range goldenInputs(t) {
		yml, _ := os.ReadFile(filepath.Join(dir, config.ConfigFile))
		lock, _ := os.ReadFile(filepath.Join(dir, lockfile.File))
		disk, err := Compile(dir, CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mem, err := Compile(dir, CompileOptions{Source: &Source{File: config.ConfigFile, Config: yml, Lock: lock}})
		if err != nil {
			t.Fatal(err)
		}
		for p, data := range disk.Files {
			if string(mem.Files[p]) != string(data) {
				t.Errorf("%s: %s differs between disk and memory", dir, p)
			}
		}
		if len(mem.Files) != len(disk.Files) {
			t.Errorf("%s: %d files from memory, %d from disk", dir, len(mem.Files), len(disk.Files))
		}
	}
}

// generate compiles dir as `agentbox generate` does and returns the files.
func generate(dir string) (map[string][]byte, error) {
	c, err := Compile(dir, CompileOptions{CheckMounts: true})
	if err != nil {
		return nil, err
	}
	return c.Files, nil
}
