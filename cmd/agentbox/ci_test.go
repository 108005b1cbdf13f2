package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/atomicfile"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// ciRepo makes a git repository (a .git directory is enough) holding a
// project in sub (".": the root) and returns the repository's directory.
func ciRepo(t *testing.T, sub string) string {
	t.Helper()
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, sub, "agentbox.yaml"), []byte("agent: claude\n"))
	return repo
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestCIGitHubWrites(t *testing.T) {
	repo := ciRepo(t, "tools/box")
	writeFile(t, filepath.Join(repo, ".gitattributes"), []byte("*.png binary\n"))
	stdout, stderr, code := runIn(t, filepath.Join(repo, "tools"), "ci", "github", "-C", "box", "--version", "v1.2.3")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "create ../.github/workflows/agentbox.yml\nupdate ../.gitattributes\n"
	if stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	wf := readFile(t, filepath.Join(repo, generator.GitHubWorkflow))
	golden, err := generator.RenderGitHubWorkflow(generator.WorkflowOptions{Dir: "tools/box", Version: "v1.2.3"})
	if err != nil || wf != string(golden) {
		t.Errorf("the workflow is not the one rendered for tools/box (%v):\n%s", err, wf)
	}
	attr := readFile(t, filepath.Join(repo, ".gitattributes"))
	if !strings.HasPrefix(attr, "*.png binary\n\n# BEGIN agentbox") || !strings.Contains(attr, "\ntools/box/.agentbox/** linguist-generated\n") {
		t.Errorf(".gitattributes:\n%s", attr)
	}
	// A second run changes nothing.
	before := readAll(t, repo)
	stdout, stderr, code = runIn(t, repo, "ci", "github", "-C", "tools/box", "--version", "v1.2.3")
	if code != exitOK || stdout != "" || !strings.Contains(stderr, "up to date") {
		t.Errorf("second run: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !sameTree(before, readAll(t, repo)) {
		t.Error("the second run changed files")
	}
	// Another version updates the workflow alone.
	stdout, _, code = runIn(t, repo, "ci", "github", "-C", "tools/box", "--version", "v1.3.0")
	if code != exitOK || stdout != "update .github/workflows/agentbox.yml\n" {
		t.Errorf("new version: exit %d, stdout %q", code, stdout)
	}
}

// TestCIGitHubForce: a workflow agentbox did not write is kept, and
// nothing is written, unless --force.
func TestCIGitHubForce(t *testing.T) {
	repo := ciRepo(t, ".")
	path := filepath.Join(repo, generator.GitHubWorkflow)
	writeFile(t, path, []byte("name: mine\n"))
	before := readAll(t, repo)
	_, stderr, code := runIn(t, repo, "ci", "github", "--version", "v1.2.3")
	if code != exitError || !strings.Contains(stderr, "agentbox did not write it") || !strings.Contains(stderr, "--force") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if !sameTree(before, readAll(t, repo)) {
		t.Error("a refused run changed files")
	}
	stdout, stderr, code := runIn(t, repo, "ci", "github", "--version", "v1.2.3", "--force")
	if code != exitOK || stdout != "update .github/workflows/agentbox.yml\ncreate .gitattributes\n" {
		t.Errorf("--force: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !strings.HasPrefix(readFile(t, path), "# "+generator.CIHeader+"\n") {
		t.Error("--force did not write the workflow")
	}
}

// TestCIGitHubAllOrNothing: when the second file cannot be written, the
// first is not either.
func TestCIGitHubAllOrNothing(t *testing.T) {
	repo := ciRepo(t, ".")
	if err := os.Mkdir(filepath.Join(repo, ".gitattributes"), 0o755); err != nil {
		t.Fatal(err) // a directory where the file goes: reading it fails
	}
	_, stderr, code := runIn(t, repo, "ci", "github", "--version", "v1.2.3")
	if code != exitError || stderr == "" {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(repo, ".github")); !os.IsNotExist(err) {
		t.Errorf("the workflow was written: %v", err)
	}
	// Tx itself: a failure staging the second file leaves the first as it was.
	var tx atomicfile.Tx
	tx.WriteFile(filepath.Join(repo, "a"), []byte("a"), 0o644)
	tx.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("b"), 0o644)
	if _, err := tx.Commit(); err == nil {
		t.Error("Commit over a directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(repo, "a")); !os.IsNotExist(err) {
		t.Errorf("the first file was written: %v", err)
	}
}

func TestCIGitHubRefuses(t *testing.T) {
	repo := ciRepo(t, ".")
	writeFile(t, filepath.Join(repo, "file"), []byte("x\n"))
	writeFile(t, filepath.Join(repo, "bad dir", "agentbox.yaml"), []byte("agent: claude\n"))
	if err := os.Mkdir(filepath.Join(repo, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "agentbox.yaml"), []byte("agent: claude\n"))
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing", []string{"--version", "v1.2.3", "-C", "missing"}, exitError, "-C missing: no such directory"},
		{"file", []string{"--version", "v1.2.3", "-C", "file"}, exitError, "-C file: not a directory"},
		{"below a file", []string{"--version", "v1.2.3", "-C", "file/sub"}, exitError, "-C file/sub: not a directory"},
		{"no config", []string{"--version", "v1.2.3", "-C", "empty"}, exitError, "agentbox.yaml: no such file or directory; run agentbox init first"},
		{"unsafe name", []string{"--version", "v1.2.3", "-C", "bad dir"}, exitError, `project directory "bad dir"`},
		{"not a repository", []string{"--version", "v1.2.3", "-C", outside}, exitError, "not in a git repository"},
		{"bad version", []string{"--version", "v1.2.3+dirty"}, exitUsage, "invalid --version"},
		{"branch", []string{"--version", "main"}, exitUsage, "invalid --version"},
		{"no version", nil, exitError, "has no version that go install can fetch"},
		{"arguments", []string{"x"}, exitUsage, "unknown command"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := readAll(t, repo)
			_, stderr, code := runIn(t, repo, append([]string{"ci", "github"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.want)
			}
			if !sameTree(before, readAll(t, repo)) {
				t.Error("a refused run changed files")
			}
		})
	}
	// The symbolic links agentbox does not write through.
	if err := os.Symlink(outside, filepath.Join(repo, ".github")); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runIn(t, repo, "ci", "github", "--version", "v1.2.3")
	if code != exitError || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("through a link: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := runIn(t, repo, "ci"); code != exitUsage || !strings.Contains(stderr, "agentbox ci github") {
		t.Errorf("ci alone: exit %d, stderr %q", code, stderr)
	}
}

// TestCIInstallVersion: without --version, the workflow installs the
// version this binary was built as, if go install can fetch it.
func TestCIInstallVersion(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		main, want string
	}{
		{"v1.2.3", "v1.2.3"},
		{"v0.0.0-20260101120000-0123456789ab", "v0.0.0-20260101120000-0123456789ab"},
		{"v1.2.3+dirty", ""},
		{"(devel)", ""},
		{"", ""},
	} {
		o := &ciGitHubOptions{buildInfo: func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Path: "github.com/agentbox-dev/agentbox", Version: tt.main}}, true
		}}
		got, err := o.installVersion()
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("main version %q: got %q, %v; want %q", tt.main, got, err, tt.want)
		}
	}
	o := &ciGitHubOptions{version: "v2.0.0", buildInfo: func() (*debug.BuildInfo, bool) { return nil, false }}
	if got, err := o.installVersion(); got != "v2.0.0" || err != nil {
		t.Errorf("--version: %q, %v", got, err)
	}
}

// TestCIGitHubWorktree: in a git worktree .git is a file; the repository's
// root is still where it is.
func TestCIGitHubWorktree(t *testing.T) {
	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, ".git"), []byte("gitdir: /elsewhere/.git/worktrees/x\n"))
	writeFile(t, filepath.Join(repo, "p", "agentbox.yaml"), []byte("agent: claude\n"))
	stdout, stderr, code := runIn(t, filepath.Join(repo, "p"), "ci", "github", "--version", "v1.2.3")
	if code != exitOK || stdout != "create ../.github/workflows/agentbox.yml\ncreate ../.gitattributes\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(readFile(t, filepath.Join(repo, generator.GitHubWorkflow)), "\n  AGENTBOX_DIR: \"p\"\n") {
		t.Error("the workflow does not name the project directory p")
	}
}

// TestCIGitattributesMatch: git itself reads the block as marking the
// generated files, and only them.
func TestCIGitattributesMatch(t *testing.T) {
	git := testenv.RequireProgram(t, "git")
	repo := ciRepo(t, "sub")
	if out, err := exec.Command(git, "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if _, stderr, code := runIn(t, repo, "ci", "github", "-C", "sub", "--version", "v1.2.3"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := map[string]string{
		"sub/.agentbox/egress/rules.nft":      "set",
		"sub/.agentbox/agent.Dockerfile":      "set",
		"sub/.devcontainer/devcontainer.json": "set",
		"sub/agentbox.lock":                   "set",
		"sub/.devcontainer/README.md":         "unspecified",
		"sub/agentbox.yaml":                   "unspecified",
		".agentbox/agent.Dockerfile":          "unspecified",
		generator.GitHubWorkflow:              "unspecified",
	}
	for p, w := range want {
		cmd := exec.Command(git, "check-attr", "linguist-generated", "--", p)
		cmd.Dir = repo
		out, err := cmd.Output()
		if got := strings.TrimPrefix(strings.TrimSpace(string(out)), p+": linguist-generated: "); err != nil || got != w {
			t.Errorf("%s: linguist-generated %q (%v), want %q", p, got, err, w)
		}
	}
}

// TestCheckGitattributes: generate --check, in a repository with agentbox's
// workflow, reports its block of .gitattributes removed or changed, and
// (with or without the workflow) a line that folds agentbox.yaml away in
// GitHub's view, by file and line; the project's own files are not at
// fault, so the message says what to run.
func TestCheckGitattributes(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repo, "box")
	if err := os.Rename(project(t, "agent-claude"), dir); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runIn(t, dir, "ci", "github", "--version", "v1.2.3"); code != exitOK {
		t.Fatalf("ci github: exit %d: %s", code, stderr)
	}
	if stdout, stderr, code := runIn(t, dir, "generate", "--check"); code != exitOK {
		t.Fatalf("--check after ci github: exit %d %s\n%s", code, stderr, stdout)
	}
	attr := filepath.Join(repo, ".gitattributes")
	block := readFile(t, attr)
	for _, tt := range []struct {
		name, attr string
		want       []string
	}{
		{"block removed", "*.png binary\n", []string{".gitattributes: agentbox's block is missing", "run agentbox ci github"}},
		{"block changed", strings.Replace(block, "box/agentbox.lock linguist-generated\n", "", 1), []string{".gitattributes:1: agentbox's block differs", "+box/agentbox.lock linguist-generated"}},
		{"agentbox.yaml folded", block + "*.yaml linguist-generated\n", []string{`.gitattributes:6: "*.yaml linguist-generated" folds box/agentbox.yaml`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, attr, []byte(tt.attr))
			stdout, stderr, code := runIn(t, dir, "generate", "--check")
			if code != exitDrift {
				t.Errorf("exit %d, want %d; stderr %q", code, exitDrift, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			if !strings.Contains(stderr, ".gitattributes") {
				t.Errorf("stderr does not name .gitattributes: %q", stderr)
			}
		})
	}
}

// TestCIGitHubFailOn: --fail-on widen is recorded in the workflow, kept by
// a later run without the flag, and dropped by --fail-on none.
func TestCIGitHubFailOn(t *testing.T) {
	repo := ciRepo(t, ".")
	wfPath := filepath.Join(repo, generator.GitHubWorkflow)
	if _, stderr, code := runIn(t, repo, "ci", "github", "--version", "v1.2.3", "--fail-on", "widen"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want, err := generator.RenderGitHubWorkflow(generator.WorkflowOptions{Dir: ".", Version: "v1.2.3", FailOn: "widen"})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, wfPath); got != string(want) || !strings.Contains(got, "- name: Fail on a widening") {
		t.Fatalf("the workflow is not the one rendered with --fail-on widen:\n%s", got)
	}
	// Again, with another version and no --fail-on: the option stays.
	if _, stderr, code := runIn(t, repo, "ci", "github", "--version", "v1.3.0"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if generator.ReadCIOptions([]byte(readFile(t, wfPath))) != "widen" || !strings.Contains(readFile(t, wfPath), `AGENTBOX_VERSION: "v1.3.0"`) {
		t.Errorf("a run without --fail-on dropped it or kept the old version:\n%s", readFile(t, wfPath))
	}
	if _, stderr, code := runIn(t, repo, "ci", "github", "--version", "v1.3.0", "--fail-on", "none"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := readFile(t, wfPath); strings.Contains(got, "Fail on a widening") || generator.ReadCIOptions([]byte(got)) != "" {
		t.Errorf("--fail-on none kept the option:\n%s", got)
	}
	if _, stderr, code := runIn(t, repo, "ci", "github", "--version", "v1.3.0", "--fail-on", "narrow"); code != exitUsage || !strings.Contains(stderr, "widen") {
		t.Errorf("--fail-on narrow: exit %d, stderr %q", code, stderr)
	}
}
