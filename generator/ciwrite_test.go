package generator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRepoRoot(t *testing.T) {
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	// a worktree's .git is a file
	if err := os.WriteFile(filepath.Join(top, ".git"), []byte("gitdir: elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "a", "b")
	root, rel, err := RepoRoot(dir)
	if err != nil || rel != "a/b" || filepath.Clean(root) != top {
		t.Errorf("RepoRoot(%s) = %s, %q, %v", dir, root, rel, err)
	}
	if _, _, err := RepoRoot(filepath.Join(top, "none")); err == nil || !strings.Contains(err.Error(), "no such directory") {
		t.Errorf("a missing directory: %v", err)
	}
	if _, _, err := RepoRoot(filepath.Join(top, ".git")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
}

// ci github writes nothing through a link.
func TestWriteGitHubCIRefusesLinks(t *testing.T) {
	top := t.TempDir()
	if err := os.Mkdir(filepath.Join(top, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ConfigPath(top), []byte("agent: none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(top, ".github")); err != nil {
		t.Fatal(err)
	}
	_, err := WriteGitHubCI(GitHubCI{Dir: top, Version: "v1.2.3"})
	if err == nil || !strings.Contains(err.Error(), "refusing to write through") {
		t.Errorf("a link at .github: %v", err)
	}
}

// generate --check's drift: the files against the disk, and .gitattributes
// only in a git repository.
func TestDrift(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{".agentbox/docker-compose.yml": []byte("services: {}\n")}
	diff, repo, err := Drift(dir, files)
	if err != nil || !strings.Contains(diff, ".agentbox/docker-compose.yml") || repo != "" {
		t.Errorf("outside a repository: diff %q, repo %q, %v", diff, repo, err)
	}
	if _, err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, Gitattributes), []byte("agentbox.yaml linguist-generated\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	diff, repo, err = Drift(dir, files)
	if err != nil || diff != "" || !strings.Contains(repo, "agentbox.yaml") {
		t.Errorf("in a repository that folds agentbox.yaml: diff %q, repo %q, %v", diff, repo, err)
	}
}
