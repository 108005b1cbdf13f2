package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/internal/testing/testca"
)

// generated is a copy of the golden case name with its generated files
// written, as agentbox generate leaves it.
func generated(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"agentbox.yaml", "agentbox.lock"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "golden", name, f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), data)
	}
	c, err := generator.Compile(dir, generator.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generator.Write(dir, c.Files); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The settings' certificates reach the build context as
// .agentbox/local/ca.pem, which generate --check leaves alone; written
// only when they change, removed when the settings name none, never
// through a link.
func TestWriteLocalCA(t *testing.T) {
	dir := generated(t, "agent-claude")
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	for _, k := range []string{"AGENTBOX_CA_CERTIFICATES", "AGENTBOX_DEBIAN_ARCHIVE", "NPM_CONFIG_REGISTRY"} {
		t.Setenv(k, "")
	}
	ca, err := testca.New()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(config, "corp.pem")
	writeFile(t, caFile, ca.PEM)
	writeFile(t, filepath.Join(config, "agentbox", "settings.yaml"), []byte("ca_certificates: ["+caFile+"]\n"))
	local := filepath.Join(dir, filepath.FromSlash(generator.LocalCA))

	if err := WriteLocalCA(dir, userSettings(t)); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(local); string(got) != string(ca.PEM) {
		t.Fatalf("%s: %q, want the settings' certificate", generator.LocalCA, got)
	}
	if _, err := Compiled(dir, false); err != nil {
		t.Errorf("generate --check with %s: %v", generator.LocalCA, err)
	}
	// Unchanged certificates: the file is not written again (a task's
	// images are rebuilt when a file of .agentbox/ is newer than they are).
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(local, old, old); err != nil {
		t.Fatal(err)
	}
	if err := WriteLocalCA(dir, userSettings(t)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(local); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("%s was written again with the same certificates", generator.LocalCA)
	}
	// No certificates in the settings: the file goes.
	writeFile(t, filepath.Join(config, "agentbox", "settings.yaml"), []byte("{}\n"))
	if err := WriteLocalCA(dir, userSettings(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(local); !os.IsNotExist(err) {
		t.Errorf("%s is left with no certificates in the settings: %v", generator.LocalCA, err)
	}
	// A link in its place is refused, and what it points to is untouched.
	writeFile(t, filepath.Join(config, "agentbox", "settings.yaml"), []byte("ca_certificates: ["+caFile+"]\n"))
	target := filepath.Join(t.TempDir(), "elsewhere")
	writeFile(t, target, []byte("untouched\n"))
	if err := os.Symlink(target, local); err != nil {
		t.Fatal(err)
	}
	if err := WriteLocalCA(dir, userSettings(t)); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("WriteLocalCA through a link: %v, want a refusal", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "untouched\n" {
		t.Errorf("the link's target was written: %q", got)
	}
}

// userSettings are the settings a command loads now.
func userSettings(t *testing.T) settings.Settings {
	t.Helper()
	s, err := settings.LoadUser(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The egress program reaches the build context as .agentbox/egress-program,
// which a fresh clone lacks (it is not committed, but for its .gitignore)
// and generate --check leaves alone: written when missing or
// different, left as it is otherwise (a task's images are rebuilt when a
// file is newer), never through a link.
func TestWriteLocalProgram(t *testing.T) {
	dir := generated(t, "agent-claude")
	c, err := generator.Compile(dir, generator.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	program := filepath.Join(dir, filepath.FromSlash(generator.EgressProgramDir))
	entry := filepath.Join(program, "entrypoint.sh")
	for _, name := range firewall.ProgramFiles { // as a fresh clone has it
		if err := os.Remove(filepath.Join(program, name)); err != nil {
			t.Fatal(err)
		}
	}
	if diff, err := generator.Diff(dir, c.Files); err != nil || diff != "" {
		t.Fatalf("a checkout without the egress program: diff %q, %v; want none", diff, err)
	}
	if err := WriteLocalProgram(dir, c.Files); err != nil {
		t.Fatal(err)
	}
	want := c.Files[generator.EgressProgramDir+"/entrypoint.sh"]
	if got, err := os.ReadFile(entry); err != nil || string(got) != string(want) {
		t.Fatalf("entrypoint.sh after WriteLocalProgram: %v", err)
	}
	if fi, err := os.Stat(entry); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("entrypoint.sh's mode: %v, %v", fi, err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(entry, old, old); err != nil {
		t.Fatal(err)
	}
	if err := WriteLocalProgram(dir, c.Files); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(entry); !fi.ModTime().Equal(old) {
		t.Errorf("an unchanged program was written again")
	}
	writeFile(t, entry, []byte("#!/bin/bash\necho another agentbox's\n"))
	if err := WriteLocalProgram(dir, c.Files); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(entry); string(got) != string(want) {
		t.Errorf("another program was left in place")
	}
	// A link in the program's place is refused, and what it points to is
	// untouched.
	target := t.TempDir()
	if err := os.RemoveAll(program); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, program); err != nil {
		t.Fatal(err)
	}
	if err := WriteLocalProgram(dir, c.Files); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("WriteLocalProgram through a link: %v, want a refusal", err)
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("WriteLocalProgram wrote through a link: %v", entries)
	}
}
