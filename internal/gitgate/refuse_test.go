package gitgate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProtectedPathsRefused: a change to each Protected entry, as the entry
// itself and as a file below it, refuses its branch; the other branches of
// the same bundle are still written.
func TestProtectedPathsRefused(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	type tc struct{ branch, path, entry string }
	var cases []tc
	main := gitT(t, agent, "rev-parse", "main")
	base := treeState{"README.md": {mode: "100644", data: "hello\n"}, "docs/guide.md": {mode: "100644", data: "guide\n"}}
	var stream bytes.Buffer // one fast-import for all branches: a commit each is slow
	for i, e := range Protected {
		paths := []string{e.Path, e.Path + "/sub/settings.json"}
		if e.Path == ".gitmodules" {
			paths = paths[:1] // a tree there is refused by git's fsck (gitmodulesBlob), for the whole bundle
		}
		for _, p := range paths {
			c := tc{fmt.Sprintf("p%d-%d", i, len(cases)), p, e.Path}
			s := base.clone()
			s[c.path] = fileEntry{mode: "100644", data: "{}\n"}
			writeCommit(&stream, "refs/heads/"+c.branch, len(cases)+1, []string{main}, s)
			cases = append(cases, c)
		}
	}
	fastImport(t, agent, stream.String())
	branch(t, agent, "ok")
	commitFiles(t, agent, map[string]string{"src/main.go": "package main\n", "docs/vscode.md": "x\n"}, "ordinary")

	res := fetchT(t, host, agent, Policy{})
	for _, c := range cases {
		wantRefused(t, host, byName(t, res, c.branch), c.path, "protected path "+c.entry+":")
	}
	wantWritten(t, host, byName(t, res, "ok"), StatusNew)
	if res.Refused() != len(cases) {
		t.Errorf("%d refused, want %d", res.Refused(), len(cases))
	}
}

// refusal is one hostile branch: make builds it in the agent's repository
// (on a branch started at main) and the branch must be refused with a reason
// for path that contains why.
type refusal struct {
	name      string
	make      func(t *testing.T, agent string)
	path, why string
}

func TestRefusals(t *testing.T) {
	files := func(fs map[string]string) func(t *testing.T, agent string) {
		return func(t *testing.T, agent string) { commitFiles(t, agent, fs, "files") }
	}
	symlink := func(link, target string) func(t *testing.T, agent string) {
		return func(t *testing.T, agent string) {
			os.MkdirAll(filepath.Join(agent, filepath.Dir(link)), 0o755)
			if err := os.Symlink(target, filepath.Join(agent, link)); err != nil {
				t.Fatal(err)
			}
			gitT(t, agent, "add", "-A")
			gitT(t, agent, "commit", "-qm", "link")
		}
	}
	cases := []refusal{
		{"gitlink", func(t *testing.T, agent string) {
			sha := gitT(t, agent, "rev-parse", "HEAD")
			gitT(t, agent, "update-index", "--add", "--cacheinfo", "160000,"+sha+",sub")
			gitT(t, agent, "commit", "-qm", "submodule")
		}, "sub", "gitlink"},
		{"gitmodules with a gitlink", func(t *testing.T, agent string) {
			writeTestFile(t, filepath.Join(agent, ".gitmodules"), "[submodule \"x\"]\n\tpath = vendor/x\n\turl = ../x\n")
			gitT(t, agent, "add", ".gitmodules")
			sha := gitT(t, agent, "rev-parse", "HEAD")
			gitT(t, agent, "update-index", "--add", "--cacheinfo", "160000,"+sha+",vendor/x")
			gitT(t, agent, "commit", "-qm", "submodule")
		}, ".gitmodules", "protected path .gitmodules"},
		{"symlink to /etc", symlink("etc", "/etc"), "etc", "absolute path"},
		{"symlink to ../../x", symlink("docs/up", "../../x"), "docs/up", "climbs out of the repository"},
		{"symlink through a name", symlink("docs/a/l", "b/../../../.."), "docs/a/l", "may climb through another link"},
		{"symlink into .git", symlink("docs/hooks", "../.git/hooks"), "docs/hooks", ".git"},
		{"symlink into .vscode", symlink("tasks.json", ".vscode/tasks.json"), "tasks.json", "protected path .vscode"},
		{"symlink named .vscode", symlink(".vscode", "docs"), ".vscode", "protected path .vscode"},
		{"upper case", files(map[string]string{".VSCODE/tasks.json": "{}\n"}), ".VSCODE/tasks.json", "protected path .vscode"},
		{"mixed case file", files(map[string]string{"AgentBox.YAML": "agent: none\n"}), "AgentBox.YAML", "protected path agentbox.yaml"},
		{"NTFS trailing dot", files(map[string]string{".vscode./tasks.json": "{}\n"}), ".vscode./tasks.json", "protected path .vscode"},
		{"NTFS trailing space", files(map[string]string{".envrc ": "x\n"}), ".envrc ", "protected path .envrc"},
		{"HFS ignorable", files(map[string]string{".vs\u200ccode/tasks.json": "{}\n"}), ".vs\u200ccode/tasks.json", "protected path .vscode"},
		{"deleted protected file", func(t *testing.T, agent string) {
			gitT(t, agent, "rm", "-q", ".pre-commit-config.yaml")
			gitT(t, agent, "commit", "-qm", "rm")
		}, ".pre-commit-config.yaml", "protected path .pre-commit-config.yaml"},
		{"only in an intermediate commit", func(t *testing.T, agent string) {
			commitFiles(t, agent, map[string]string{".vscode/tasks.json": `{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}`}, "add")
			gitT(t, agent, "rm", "-rq", ".vscode")
			gitT(t, agent, "commit", "-qm", "hide it again")
		}, ".vscode/tasks.json", "protected path .vscode"},
		{"in a merge of the agent's own", func(t *testing.T, agent string) {
			gitT(t, agent, "checkout", "-q", "-b", "side-"+filepath.Base(agent))
			commitFiles(t, agent, map[string]string{"side.txt": "x\n"}, "side")
			gitT(t, agent, "checkout", "-q", "-")
			commitFiles(t, agent, map[string]string{"main.txt": "x\n"}, "main")
			gitT(t, agent, "merge", "-q", "--no-commit", "side-"+filepath.Base(agent))
			writeTestFile(t, filepath.Join(agent, ".claude/settings.json"), `{"hooks":{}}`)
			gitT(t, agent, "add", "-A")
			gitT(t, agent, "commit", "-qm", "evil merge")
			gitT(t, agent, "branch", "-D", "side-"+filepath.Base(agent))
		}, ".claude/settings.json", "protected path .claude"},
		// git takes a directory holding HEAD with objects and refs (or a
		// commondir) for a bare repository: run inside it, git reads its
		// config (core.pager, core.editor, ...) and runs its hooks.
		{"embedded bare repository", files(map[string]string{
			"vendor/x/HEAD": "ref: refs/heads/main\n", "vendor/x/objects/.keep": "", "vendor/x/refs/.keep": "",
			"vendor/x/config": "[core]\n\tpager = touch /tmp/pwned; cat\n",
		}), "vendor/x/HEAD", "git would take for a repository"},
		{"bare repository with a commondir", files(map[string]string{
			"d/HEAD": "ref: refs/heads/main\n", "d/commondir": "../c\n", "c/objects/.keep": "", "c/refs/.keep": "",
		}), "d/HEAD", "git would take for a repository"},
		{"bare repository in other case", files(map[string]string{"e/head": "x\n", "e/Objects/.keep": "", "e/REFS/.keep": ""}), "e/head", "git would take for a repository"},
		{"bare repository at the top", files(map[string]string{"HEAD": "x\n", "refs/a": "", "objects/b": ""}), "HEAD", "git would take for a repository"},
		{"top-level devcontainer.json", files(map[string]string{".devcontainer.json": `{"initializeCommand":"touch /tmp/pwned"}`}), ".devcontainer.json", "protected path .devcontainer.json"},
		{"husky 4 rc", files(map[string]string{".huskyrc": `{"hooks":{"pre-commit":"touch /tmp/pwned"}}`}), ".huskyrc", "protected path .huskyrc"},
		{"lefthook", files(map[string]string{"lefthook.yml": "pre-commit:\n  commands:\n    x:\n      run: touch /tmp/pwned\n"}), "lefthook.yml", "protected path lefthook.yml"},
		{"mise", files(map[string]string{"mise.toml": "[hooks]\nenter = \"touch /tmp/pwned\"\n"}), "mise.toml", "protected path mise.toml"},
		{"read-only path", files(map[string]string{"docs/adr/0001.md": "x\n"}), "docs/adr/0001.md", "read-only path docs/adr"},
		{"read-only path, other case", files(map[string]string{"Docs/ADR/0002.md": "x\n"}), "Docs/ADR/0002.md", "read-only path docs/adr"},
		{"writable does not cover a sibling", files(map[string]string{".vscode/tasks.json": "{}\n"}), ".vscode/tasks.json", "protected path .vscode"},
	}
	isolate(t)
	host := newHost(t)
	commitFiles(t, host, map[string]string{".pre-commit-config.yaml": "repos: []\n"}, "pre-commit")
	agent := newAgent(t, host)
	for i, c := range cases {
		branch(t, agent, fmt.Sprintf("r%d", i))
		c.make(t, agent)
	}
	branch(t, agent, "ok")
	policy := Policy{ReadOnly: []string{"docs/adr"}, Writable: []string{".vscode/extensions.json"}}
	commitFiles(t, agent, map[string]string{".vscode/extensions.json": "{}\n", "docs/adr.md": "x\n",
		"src/objects/a.go": "package objects\n", "src/refs/b.go": "package refs\n", "docs/HEAD.md": "x\n"}, "allowed by the policy")
	res := fetchT(t, host, agent, policy)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantRefused(t, host, byName(t, res, fmt.Sprintf("r%d", i)), c.path, c.why)
		})
	}
	t.Run("accepted", func(t *testing.T) {
		wantWritten(t, host, byName(t, res, "ok"), StatusNew)
	})
}

// TestSymlinksInside: links that stay in the repository and lead nowhere
// protected are accepted.
func TestSymlinksInside(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "links")
	for link, target := range map[string]string{"docs/readme": "../README.md", "a/b/up": "../../docs", "root": ".", "here": "./docs/guide.md"} {
		os.MkdirAll(filepath.Join(agent, filepath.Dir(link)), 0o755)
		if err := os.Symlink(target, filepath.Join(agent, link)); err != nil {
			t.Fatal(err)
		}
	}
	commitFiles(t, agent, nil, "links")
	wantWritten(t, host, byName(t, fetchT(t, host, agent, Policy{}), "links"), StatusNew)
}

// TestWritableOptOut: a protected path the user made writable is accepted,
// and only that one.
func TestWritableOptOut(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "settings")
	commitFiles(t, agent, map[string]string{".vscode/settings.json": "{}\n", ".VSCode/launch.json": "{}\n"}, "vscode")
	branch(t, agent, "claude")
	commitFiles(t, agent, map[string]string{".claude/settings.json": "{}\n"}, "claude")
	res := fetchT(t, host, agent, Policy{Writable: []string{".vscode"}})
	wantWritten(t, host, byName(t, res, "settings"), StatusNew)
	wantRefused(t, host, byName(t, res, "claude"), ".claude/settings.json", "protected path .claude")
}

// TestMergeOfTheHostsWork: a merge that takes a protected change from the
// host's own history is not the agent's change.
func TestMergeOfTheHostsWork(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	commitFiles(t, host, map[string]string{".vscode/settings.json": "{\"editor.tabSize\": 4}\n"}, "the user's settings")
	branch(t, agent, "feature")
	commitFiles(t, agent, map[string]string{"src/a.go": "package a\n"}, "work")
	gitT(t, agent, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
	b := byName(t, fetchT(t, host, agent, Policy{}), "feature")
	wantWritten(t, host, b, StatusNew)
	if b.Commits != 2 {
		t.Errorf("commits = %d, want 2 (the work and the merge)", b.Commits)
	}
}

func mktree(t *testing.T, repo, entries string) string {
	t.Helper()
	cmd := gitCmd(repo, "mktree")
	cmd.Stdin = strings.NewReader(entries)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestCheckedOutNotMoved: a destination checked out on the host, in the
// main work tree or a linked one, is not moved.
func TestCheckedOutNotMoved(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "one")
	commitFiles(t, agent, map[string]string{"one.txt": "1\n"}, "one")
	branch(t, agent, "two")
	commitFiles(t, agent, map[string]string{"two.txt": "2\n"}, "two")
	fetchT(t, host, agent, Policy{})
	gitT(t, host, "checkout", "-q", "agentbox/one")
	gitT(t, host, "worktree", "add", "-q", filepath.Join(t.TempDir(), "wt"), "agentbox/two")
	before1, before2 := refOf(t, host, "agentbox/one"), refOf(t, host, "agentbox/two")

	for _, b := range []string{"one", "two"} {
		gitT(t, agent, "checkout", "-q", b)
		commitFiles(t, agent, map[string]string{b + ".txt": "more\n"}, "more")
	}
	res := fetchT(t, host, agent, Policy{})
	wantRefused(t, host, byName(t, res, "one"), "", "is checked out in "+host)
	wantRefused(t, host, byName(t, res, "two"), "", "/wt: fetch does not move it")
	if refOf(t, host, "agentbox/one") != before1 || refOf(t, host, "agentbox/two") != before2 {
		t.Error("a checked-out branch moved")
	}
}

// TestHostHooksPathProtected: when the host's core.hooksPath lies in the
// work tree, a change below it is refused.
func TestHostHooksPathProtected(t *testing.T) {
	isolate(t)
	host := newHost(t)
	gitT(t, host, "config", "core.hooksPath", ".githooks")
	agent := newAgent(t, host)
	branch(t, agent, "hook")
	commitFiles(t, agent, map[string]string{".githooks/pre-commit": "#!/bin/sh\n"}, "hook")
	wantRefused(t, host, byName(t, fetchT(t, host, agent, Policy{}), "hook"), ".githooks/pre-commit", "core.hooksPath")

	gitT(t, host, "config", "--unset", "core.hooksPath")
	wantWritten(t, host, byName(t, fetchT(t, host, agent, Policy{}), "hook"), StatusNew)
}
