// Package gittest holds what tests that run the real git share: a home and
// global configuration of the test's own, git in a directory, a commit of
// files. Tests that need git skip without it (testenv.RequireProgram),
// except under CI=true.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// Home points HOME and git's global configuration at throwaway files: an
// author T <t@example.invalid>, branch main by default, no system file.
func Home(t testing.TB) {
	t.Helper()
	testenv.RequireProgram(t, "git")
	home := t.TempDir()
	WriteFile(t, filepath.Join(home, "gitconfig"), []byte("[user]\n\tname = T\n\temail = t@example.invalid\n[init]\n\tdefaultBranch = main\n"))
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
}

// Git runs git with args in dir and returns its output, trimmed; a failure
// fails the test.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// CommitAll writes files (path in repo -> content) and commits every file
// of repo.
func CommitAll(t testing.TB, repo string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		WriteFile(t, filepath.Join(repo, p), []byte(c))
	}
	Git(t, repo, "add", "-A")
	Git(t, repo, "commit", "-qm", "commit")
}

// WriteFile writes data at path, making its directories.
func WriteFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
