package gitgate

import (
	"os"
	"path/filepath"
	"testing"
)

// symlinkT makes a symlink at link (relative to repo) to target.
func symlinkT(t *testing.T, repo, link, target string) {
	t.Helper()
	p := filepath.Join(repo, link)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(p)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// mergeOf builds branch name in the agent's repository as a clean merge of
// two branches started at main, one committing a, the other b.
func mergeOf(t *testing.T, agent, name string, a, b map[string]string) {
	t.Helper()
	branch(t, agent, name+"-b")
	commitFiles(t, agent, b, "side b")
	branch(t, agent, name)
	commitFiles(t, agent, a, "side a")
	gitT(t, agent, "merge", "-q", "--no-edit", name+"-b")
	gitT(t, agent, "branch", "-q", "-D", name+"-b")
}

// TestMergeAssemblesBareRepository: a clean merge of two branches, neither
// of which has a repository look-alike, whose tree has one. The merge
// changes no path (every file comes from one parent), so only a check of
// the whole tree sees it.
func TestMergeAssemblesBareRepository(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	config := "[core]\n\tpager = touch pwned; cat\n"
	mergeOf(t, agent, "objects",
		map[string]string{"d/HEAD": "ref: refs/heads/main\n", "d/refs/heads/.keep": "", "d/config": config},
		map[string]string{"d/objects/.keep": ""})
	mergeOf(t, agent, "commondir",
		map[string]string{"e/HEAD": "ref: refs/heads/main\n", "e/config": config},
		map[string]string{"e/commondir": "../c\n", "c/objects/.keep": "", "c/refs/.keep": ""})

	// The control: git takes the merged directory for a repository.
	gitT(t, agent, "checkout", "-q", "objects")
	cmd := gitCmd(filepath.Join(agent, "d"), "rev-parse", "--git-dir")
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+agent)
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != ".\n" {
		t.Fatalf("control: git in d says %q %v, want it to be a git directory", out, err)
	}

	res := fetchT(t, host, agent, Policy{})
	wantRefused(t, host, byName(t, res, "objects"), "d", "git would take for a repository")
	wantRefused(t, host, byName(t, res, "commondir"), "e", "git would take for a repository")
}

// TestInsideAnExistingLookAlike: a project that keeps a bare repository as a
// fixture gets no change to what git reads from it (config, hooks,
// commondir, info, HEAD, nor the config of the directory its commondir
// names), but changes to its objects and refs and elsewhere are accepted.
func TestInsideAnExistingLookAlike(t *testing.T) {
	isolate(t)
	host := newHost(t)
	commitFiles(t, host, map[string]string{
		"fixtures/repo.git/HEAD": "ref: refs/heads/main\n", "fixtures/repo.git/config": "[core]\n\tbare = true\n",
		"fixtures/repo.git/objects/info/packs": "\n", "fixtures/repo.git/refs/heads/main": "0000000000000000000000000000000000000000\n",
		"fixtures/wt/HEAD": "ref: refs/heads/main\n", "fixtures/wt/commondir": "../shared\n",
		"fixtures/shared/objects/.keep": "", "fixtures/shared/refs/.keep": "", "fixtures/shared/config": "[core]\n",
	}, "fixtures")
	agent := newAgent(t, host)
	refused := map[string]string{
		"config":            "fixtures/repo.git/config",
		"hooks":             "fixtures/repo.git/hooks/post-checkout",
		"info":              "fixtures/repo.git/info/attributes",
		"head":              "fixtures/repo.git/HEAD",
		"commondir":         "fixtures/wt/commondir",
		"common-config":     "fixtures/shared/config",
		"other-case-config": "fixtures/repo.git/CONFIG",
	}
	for name, p := range refused {
		branch(t, agent, name)
		commitFiles(t, agent, map[string]string{p: "[core]\n\tpager = touch pwned; cat\n"}, name)
	}
	accepted := map[string]string{
		"objects":      "fixtures/repo.git/objects/info/packs",
		"refs":         "fixtures/repo.git/refs/heads/main",
		"common-refs":  "fixtures/shared/refs/heads/x",
		"elsewhere":    "src/main.go",
		"sibling-repo": "fixtures/README.md",
	}
	for name, p := range accepted {
		branch(t, agent, name)
		commitFiles(t, agent, map[string]string{p: "x\n"}, name)
	}
	res := fetchT(t, host, agent, Policy{})
	for name, p := range refused {
		wantRefused(t, host, byName(t, res, name), p, "inside ")
	}
	for name := range accepted {
		wantWritten(t, host, byName(t, res, name), StatusNew)
	}
}

// TestUserLinksMoveProtectedPaths: the user's own links point protected
// names at other paths of the work tree; a change there is a change of the
// protected path.
func TestUserLinksMoveProtectedPaths(t *testing.T) {
	isolate(t)
	host := newHost(t)
	writeTestFile(t, filepath.Join(host, "editor/vscode/settings.json"), "{}\n")
	writeTestFile(t, filepath.Join(host, "tools/env.sh"), "export A=1\n")
	writeTestFile(t, filepath.Join(host, "tools/githooks/.keep"), "")
	writeTestFile(t, filepath.Join(host, "notes/adr/0001.md"), "x\n")
	symlinkT(t, host, ".vscode", "editor/vscode")
	symlinkT(t, host, ".envrc", "tools/env.sh")
	symlinkT(t, host, "hooks", "tools/githooks")
	symlinkT(t, host, "docs/adr", "../notes/adr")
	commitFiles(t, host, nil, "the user's links")
	gitT(t, host, "config", "core.hooksPath", "hooks")
	agent := newAgent(t, host)

	refused := map[string]string{
		"vscode": "editor/vscode/tasks.json",
		"envrc":  "tools/env.sh",
		"hooks":  "tools/githooks/pre-commit",
		"adr":    "notes/adr/0002.md",
	}
	for name, p := range refused {
		branch(t, agent, name)
		commitFiles(t, agent, map[string]string{p: "x\n"}, name)
	}
	// Moving the link's target dir elsewhere moves the protected path.
	branch(t, agent, "relink")
	gitT(t, agent, "mv", "editor", "editor2")
	symlinkT(t, agent, "editor", "elsewhere")
	commitFiles(t, agent, map[string]string{"elsewhere/vscode/tasks.json": "{}\n"}, "relink")

	branch(t, agent, "writable")
	commitFiles(t, agent, map[string]string{"editor/vscode/extensions.json": "{}\n", "tools/other.sh": "x\n"}, "allowed")

	res := fetchT(t, host, agent, Policy{ReadOnly: []string{"docs/adr"}, Writable: []string{".vscode/extensions.json"}})
	wantRefused(t, host, byName(t, res, "vscode"), "editor/vscode/tasks.json", "protected path .vscode")
	wantRefused(t, host, byName(t, res, "envrc"), "tools/env.sh", "protected path .envrc")
	wantRefused(t, host, byName(t, res, "hooks"), "tools/githooks/pre-commit", "core.hooksPath")
	wantRefused(t, host, byName(t, res, "adr"), "notes/adr/0002.md", "read-only path docs/adr")
	wantRefused(t, host, byName(t, res, "relink"), "editor", "on the way to")
	wantWritten(t, host, byName(t, res, "writable"), StatusNew)
}

// TestHooksPathSpellings: core.hooksPath written with ~ or as an absolute
// path through a linked directory names the work tree's hooks directory
// all the same.
func TestHooksPathSpellings(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "hook")
	commitFiles(t, agent, map[string]string{".githooks/pre-commit": "#!/bin/sh\n"}, "hook")
	bundle := bundleOf(t, agent)

	home := filepath.Dir(host)
	t.Setenv("HOME", home)
	link := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	for _, hp := range []string{"~/host/.githooks", filepath.Join(link, "host", ".githooks"), "./.githooks/"} {
		t.Run(hp, func(t *testing.T) {
			gitT(t, host, "config", "core.hooksPath", hp)
			wantRefused(t, host, byName(t, fetchT2(t, host, bundle), "hook"), ".githooks/pre-commit", "core.hooksPath")
		})
	}
}

// TestTreeCombinations: what only the whole tree, or the tree with the
// host's work tree, shows.
func TestTreeCombinations(t *testing.T) {
	isolate(t)
	host := newHost(t)
	writeTestFile(t, filepath.Join(host, ".gitignore"), "build/\n")
	commitFiles(t, host, nil, "ignore build")
	agent := newAgent(t, host)
	// Ignored, untracked: the agent's HEAD completes a repository.
	writeTestFile(t, filepath.Join(host, "build/objects/.keep"), "")
	writeTestFile(t, filepath.Join(host, "build/refs/.keep"), "")
	// An untracked link of the user's moves .claude.
	symlinkT(t, host, ".claude", "local/claude")
	writeTestFile(t, filepath.Join(host, ".git/info/exclude"), ".claude\nlocal/\n")

	branch(t, agent, "untracked")
	gitT(t, agent, "add", "-f", writeAndName(t, agent, "build/HEAD", "ref: refs/heads/main\n"))
	gitT(t, agent, "commit", "-qm", "head")
	branch(t, agent, "claude")
	commitFiles(t, agent, map[string]string{"local/claude/settings.json": "{}\n"}, "claude")
	// Two links, each harmless alone, merged: sub/l -> sub/b/.husky -> .husky (husky is read at the top only).
	branch(t, agent, "chain-b")
	symlinkT(t, agent, "sub/b", "..")
	commitFiles(t, agent, nil, "b")
	branch(t, agent, "chain")
	symlinkT(t, agent, "sub/l", "b/.husky")
	commitFiles(t, agent, map[string]string{"sub/x": "x\n"}, "l")
	gitT(t, agent, "merge", "-q", "--no-edit", "chain-b")
	merge := gitT(t, agent, "rev-parse", "HEAD")
	gitT(t, agent, "branch", "-q", "-D", "chain-b")

	res := fetchT(t, host, agent, Policy{})
	wantRefused(t, host, byName(t, res, "untracked"), "build", "your work tree has there now (objects, refs)")
	wantRefused(t, host, byName(t, res, "claude"), "local/claude/settings.json", "protected path .claude")
	b := byName(t, res, "chain")
	wantRefused(t, host, b, "sub/l", "leads through other links to .husky")
	for _, r := range b.Reasons {
		if r.Commit != merge {
			t.Errorf("reason %+v: want it at the merge %s", r, merge)
		}
	}
}

func writeAndName(t *testing.T, repo, p, content string) string {
	t.Helper()
	writeTestFile(t, filepath.Join(repo, p), content)
	return p
}

// TestInsideAnUntrackedLookAlike: a repository look-alike that only the
// host's work tree has (ignored, untracked) is the user's too: a branch
// that would write its config is refused, one that writes to its objects
// is not.
func TestInsideAnUntrackedLookAlike(t *testing.T) {
	isolate(t)
	host := newHost(t)
	writeTestFile(t, filepath.Join(host, ".gitignore"), "cache.git/\n")
	commitFiles(t, host, nil, "ignore")
	agent := newAgent(t, host)
	for _, f := range []string{"HEAD", "objects/.keep", "refs/.keep", "config"} {
		writeTestFile(t, filepath.Join(host, "tools/cache.git", f), "ref: refs/heads/main\n")
	}
	branch(t, agent, "config")
	gitT(t, agent, "add", "-f", writeAndName(t, agent, "tools/cache.git/config", "[core]\n\tpager = touch pwned; cat\n"))
	gitT(t, agent, "commit", "-qm", "config")
	branch(t, agent, "objects")
	gitT(t, agent, "add", "-f", writeAndName(t, agent, "tools/cache.git/objects/info/packs", "\n"))
	gitT(t, agent, "commit", "-qm", "objects")
	res := fetchT(t, host, agent, Policy{})
	wantRefused(t, host, byName(t, res, "config"), "tools/cache.git/config", "inside tools/cache.git")
	wantWritten(t, host, byName(t, res, "objects"), StatusNew)
}

// TestNestedToolFiles: tools that read the directory you open or enter
// (direnv, Emacs, Vim, mise, editors and agents opened on a subfolder) read
// their files at any depth; git hook managers read the top only. A link of
// the user's inside a protected directory leads it elsewhere too.
func TestNestedToolFiles(t *testing.T) {
	isolate(t)
	host := newHost(t)
	writeTestFile(t, filepath.Join(host, "tools/tasks.json"), "{}\n")
	symlinkT(t, host, ".vscode/tasks.json", "../tools/tasks.json")
	commitFiles(t, host, nil, "a link inside .vscode")
	agent := newAgent(t, host)
	refused := map[string]string{
		"envrc":       "services/api/.envrc",
		"dirlocals":   "src/.dir-locals.el",
		"vscode":      "web/.vscode/tasks.json",
		"mise":        "sub/mise.toml",
		"claude":      "pkg/.claude/settings.json",
		"link-inside": "tools/tasks.json",
	}
	accepted := map[string]string{
		"husky":    "sub/.husky/pre-commit",
		"lefthook": "sub/lefthook.yml",
		"writable": "docker/.env",
	}
	for name, p := range refused {
		branch(t, agent, name)
		commitFiles(t, agent, map[string]string{p: "x\n"}, name)
	}
	for name, p := range accepted {
		branch(t, agent, name)
		commitFiles(t, agent, map[string]string{p: "x\n"}, name)
	}
	res := fetchT(t, host, agent, Policy{Writable: []string{"docker/.env"}})
	for name, p := range refused {
		wantRefused(t, host, byName(t, res, name), p, "protected path ")
	}
	for name := range accepted {
		wantWritten(t, host, byName(t, res, name), StatusNew)
	}
}

// TestHooksDirLinkedIntoTheWorkTree: without core.hooksPath, git runs the
// hooks of .git/hooks; a user who links it to a directory of the work tree
// has that directory's programs run by git.
func TestHooksDirLinkedIntoTheWorkTree(t *testing.T) {
	isolate(t)
	host := newHost(t)
	os.RemoveAll(filepath.Join(host, ".git/hooks"))
	symlinkT(t, host, ".git/hooks", "../githooks")
	agent := newAgent(t, host)
	branch(t, agent, "hook")
	commitFiles(t, agent, map[string]string{"githooks/pre-commit": "#!/bin/sh\ntouch pwned\n"}, "hook")
	wantRefused(t, host, byName(t, fetchT(t, host, agent, Policy{}), "hook"), "githooks/pre-commit", "hooks directory")
}

// TestConfigNamesWorkTreeFiles: the host's git configuration can include a
// file of the work tree, or name a program there that git runs by itself;
// those files are protected.
func TestConfigNamesWorkTreeFiles(t *testing.T) {
	isolate(t)
	host := newHost(t)
	commitFiles(t, host, map[string]string{"team.gitconfig": "[core]\n", "tools/fsmonitor.sh": "#!/bin/sh\n",
		"tools/textconv.sh": "#!/bin/sh\ncat \"$1\"\n", "scripts/lint.sh": "#!/bin/sh\n"}, "tools")
	gitT(t, host, "config", "include.path", "../team.gitconfig")
	gitT(t, host, "config", "core.fsmonitor", "tools/fsmonitor.sh")
	gitT(t, host, "config", "diff.pdf.textconv", "sh ./tools/textconv.sh")
	gitT(t, host, "config", "alias.lint", "!sh scripts/lint.sh")
	agent := newAgent(t, host)
	refused := map[string]string{"include": "team.gitconfig", "fsmonitor": "tools/fsmonitor.sh", "textconv": "tools/textconv.sh"}
	for name, p := range refused {
		branch(t, agent, name)
		commitFiles(t, agent, map[string]string{p: "[core]\n\tpager = touch pwned; cat\n"}, name)
	}
	branch(t, agent, "alias") // an alias runs what you ask for, like make
	commitFiles(t, agent, map[string]string{"scripts/lint.sh": "#!/bin/sh\necho lint\n"}, "alias")
	res := fetchT(t, host, agent, Policy{})
	for name, p := range refused {
		wantRefused(t, host, byName(t, res, name), p, "your git configuration")
	}
	wantWritten(t, host, byName(t, res, "alias"), StatusNew)
}

// TestUsersOwnDotGitSpelling: an entry of the user's own tree that some
// filesystem takes for .git (git~1, committed before git refused such
// paths) is not held against the agent's branch that keeps it; the same
// entry new in a branch is refused.
func TestUsersOwnDotGitSpelling(t *testing.T) {
	isolate(t)
	host := newHost(t)
	agent := newAgent(t, host)
	withTree := func(repo, base, name, tree string) string {
		t.Helper()
		return mktree(t, repo, gitT(t, repo, "ls-tree", base)+"\n040000 tree "+tree+"\t"+name+"\n")
	}
	blob := hashObject(t, host, "blob", "x\n")
	dotGit := mktree(t, host, "040000 tree "+mktree(t, host, "100644 blob "+blob+"\tx\n")+"\tgit~1\n")
	userCommit := gitT(t, host, "commit-tree", "-p", "HEAD", "-m", "vendor", withTree(host, "HEAD", "vendor", dotGit))
	gitT(t, host, "update-ref", "refs/heads/main", userCommit)

	gitT(t, agent, "fetch", "-q", "origin", "main")
	for name, tree := range map[string]string{"keep": mktree(t, agent, "100644 blob "+blob+"\tx\n"), "new": dotGit} {
		c := gitT(t, agent, "commit-tree", "-p", userCommit, "-m", name, withTree(agent, userCommit, "more", tree))
		gitT(t, agent, "update-ref", "refs/heads/"+name, c)
	}
	res := fetchT(t, host, agent, Policy{})
	wantWritten(t, host, byName(t, res, "keep"), StatusNew)
	wantRefused(t, host, byName(t, res, "new"), "more/git~1", "git's own directory")
}

// TestUsersOwnLinkIntoProtectedPath: a link the user's own tree has, which
// leads through another link into a path fetch protects, is not held
// against the agent's branch that keeps it; the same link new in a branch
// is refused.
func TestUsersOwnLinkIntoProtectedPath(t *testing.T) {
	isolate(t)
	host := newHost(t)
	writeTestFile(t, filepath.Join(host, "notes/adr/0001.md"), "x\n")
	symlinkT(t, host, "adr", "notes/adr")
	symlinkT(t, host, "decisions", "adr")
	commitFiles(t, host, nil, "the user's links")
	agent := newAgent(t, host)
	branch(t, agent, "keep")
	commitFiles(t, agent, map[string]string{"src/main.go": "package main\n"}, "keep")
	branch(t, agent, "new")
	symlinkT(t, agent, "decided", "adr")
	commitFiles(t, agent, nil, "new")
	res := fetchT(t, host, agent, Policy{ReadOnly: []string{"notes/adr"}})
	wantWritten(t, host, byName(t, res, "keep"), StatusNew)
	wantRefused(t, host, byName(t, res, "new"), "decided", "leads through other links to notes/adr")
}
