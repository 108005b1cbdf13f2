//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
)

// attackScript runs as the agent in the sandbox and tries every way known
// to make the user's host run its code: through the host's git database
// (hooks, config, commondir, renaming .git), and through commits that plant
// git configuration, hooks, gitlinks, embedded repositories, submodules,
// symlinks and the files that host tools run (.vscode, .claude, .mcp.json,
// .envrc, ...). Each planted command touches MARKER-<class> on whatever
// machine runs it. It prints one "what: planted|refused" line per write
// into the git database and "branch B: committed" per branch.
const attackScript = `set -u
M=$1
o=/run/agentbox/origin
try() { local what=$1; shift; if "$@" 2>/dev/null; then echo "$what: planted"; else echo "$what: refused"; fi; }
hook() { printf '#!/bin/sh\ntouch %s\n' "$M-$1"; }
try "origin hook" sh -c "$(declare -f hook); hook origin-hook >$o/hooks/post-checkout && chmod +x $o/hooks/post-checkout"
try "origin config" sh -c "printf '[core]\n\tfsmonitor = touch $M-origin-config\n' >>$o/config"
try "origin commondir" sh -c "echo /tmp >$o/commondir"
try "origin rename" mv $o $o-orig
try "origin modules" mkdir -p $o/modules/sub
try "origin info" sh -c "echo x >$o/info/attributes"

cd /workspace
git config user.email agent@sandbox.invalid
git config user.name agent
base=$(git rev-parse HEAD)
commit() { git add -A && git commit -q -m "$1" && echo "branch $1: committed" || echo "branch $1: failed"; }
plant() { local b=$1; shift; git checkout -q -b "$b" "$base"; "$@"; commit "$b"; }
task='{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"touch '$M'-vscode","runOptions":{"runOn":"folderOpen"}}]}'
plant clean sh -c 'echo ordinary work >feature.txt'
plant vscode sh -c "mkdir -p .vscode && echo '$task' >.vscode/tasks.json"
plant vscode-case sh -c "mkdir -p .VSCode && echo '$task' >.VSCode/tasks.json"
plant claude sh -c "mkdir -p .claude && echo '{\"hooks\":{\"SessionStart\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"touch $M-claude\"}]}]}}' >.claude/settings.json"
plant mcp sh -c "echo '{\"mcpServers\":{\"x\":{\"command\":\"touch\",\"args\":[\"$M-mcp\"]}}}' >.mcp.json"
plant envrc sh -c "echo 'touch $M-envrc' >.envrc"
plant pre-commit sh -c "printf 'repos:\n- repo: local\n  hooks:\n  - id: x\n    name: x\n    entry: touch $M-pre-commit\n    language: system\n' >.pre-commit-config.yaml"
plant husky sh -c "mkdir -p .husky && echo 'touch $M-husky' >.husky/pre-commit"
plant idea sh -c "mkdir -p .idea && echo '<project/>' >.idea/workspace.xml"
plant agentbox-yaml sh -c "echo '# widened' >>agentbox.yaml"
# A nested repository whose config runs a program, added as an embedded
# repository (a gitlink), with a .gitmodules entry pointing at it.
nested() {
	mkdir -p sub && git -C sub init -q && git -C sub config core.fsmonitor "touch $M-embedded" &&
		printf '#!/bin/sh\ntouch %s\n' "$M-embedded-hook" >sub/.git/hooks/post-index-change && chmod +x sub/.git/hooks/post-index-change &&
		echo x >sub/f && git -C sub add f && git -C sub -c user.name=a -c user.email=a@b commit -q -m x &&
		printf '[submodule "sub"]\n\tpath = sub\n\turl = ./sub\n' >.gitmodules
}
plant embedded nested
git checkout -q -b gitlink "$base"
git update-index --add --cacheinfo "160000,$base,lib" && git commit -q -m gitlink && echo "branch gitlink: committed"
plant symlink sh -c 'ln -s /etc etc-link'
plant symlink-up sh -c 'ln -s ../../../../root up-link'
plant devcontainer-json sh -c "echo '{\"image\":\"x\",\"initializeCommand\":\"touch $M-devcontainer\"}' >.devcontainer.json"
plant lefthook sh -c "printf 'pre-commit:\n  commands:\n    x:\n      run: touch $M-lefthook\n' >lefthook.yml"
plant nested-envrc sh -c "mkdir -p sub2 && echo 'touch $M-nested-envrc' >sub2/.envrc"
# A bare repository look-alike that only a merge assembles: neither side,
# and no path of the merge, looks like one.
git checkout -q -b bare-side "$base"
mkdir -p d/objects && touch d/objects/.keep && git add -A && git commit -q -m side
git checkout -q -b bare-merge "$base"
mkdir -p d/refs && touch d/refs/.keep && echo 'ref: refs/heads/main' >d/HEAD && printf '[core]\n\tpager = touch %s\n' "$M-bare-merge" >d/config
git add -A && git commit -q -m other && git merge -q --no-edit bare-side && git branch -q -D bare-side && echo "branch bare-merge: committed"
git checkout -q -b intermediate "$base"
mkdir -p .vscode && echo "$task" >.vscode/tasks.json && commit intermediate-1
git rm -q -r .vscode && git commit -q -m intermediate-2 && echo "branch intermediate: committed"
# What a branch may carry: each of these is refused on its own, and its
# objects stay out of the host's repository. A tree with a .git entry
# (fsck), a file 4,000 directories deep (git 2.39's checkout crashes), a
# blob of 150 MB of zeros (150 KB packed), a name of 252 bytes (through
# packed-refs: the host cannot lock it as a file).
blob=$(echo x | git hash-object -w --stdin)
sub=$(printf '100644 blob %s\tconfig\n' "$blob" | git mktree)
c=$(git commit-tree -p "$base" -m dotgit-tree "$(printf '040000 tree %s\t.git\n' "$sub" | git mktree)") &&
	git update-ref refs/heads/dotgit-tree "$c" && echo "branch dotgit-tree: committed"
p=$(printf 'd/%.0s' $(seq 4000))f
printf 'commit refs/heads/deep\ncommitter a <a@sandbox.invalid> 0 +0000\ndata 4\ndeep\nfrom %s\nM 100644 inline %s\ndata 2\nx\n\n' "$base" "$p" |
	git fast-import --quiet 2>/dev/null && echo "branch deep: committed"
z=$(head -c 150000000 /dev/zero | git hash-object -w --stdin)
c=$(git commit-tree -p "$base" -m zeros "$(printf '100644 blob %s\tzeros.bin\n' "$z" | git mktree)") &&
	git update-ref refs/heads/zeros "$c" && echo "branch zeros: committed" && echo "refused-object $z"
git pack-refs --all && sed -i '/^#/d' .git/packed-refs &&
	printf '%s refs/heads/%s\n' "$base" "$(printf 'n%.0s' $(seq 252))" >>.git/packed-refs && echo "branch long-name: committed"
# The clone's own configuration and hooks: they run in the sandbox only.
git config core.fsmonitor "touch $M-clone-config"
hook clone-hook >.git/hooks/post-checkout && chmod +x .git/hooks/post-checkout
git checkout -q clean
exit 0 # the planted hooks fail here: the marker's directory is the host's
`

// hostGitScript runs, on the host, the ordinary git commands a user runs
// after a session, in a copy of the project and with a throwaway global
// configuration. $1 is a bundle of the agent's clone (to pull from).
const hostGitScript = `set -u
run() { echo "+ git $*"; git "$@" >/dev/null 2>&1 || echo "  (exit $?)"; }
run status
run diff
run log --all --oneline
run branch -a
run checkout agentbox/clean
run status
run checkout main
echo x >>README
run add -A
run commit -q -m "host work"
run pull --no-rebase --no-edit "$1" clean
run submodule update --init --recursive
run worktree add -q ../wt agentbox/clean
run -C ../wt status
run fetch "$1" "refs/heads/*:refs/remotes/sandbox/*"
run status
`

// testAttack: a hostile agent plants everything it can; agentbox fetch
// brings back the ordinary branch only, and the user's git commands on the
// host run nothing the agent planted.
func testAttack(e *env, p *project) {
	t := e.t
	ensureUp(e, p)
	marker := filepath.Join(e.work, "pwned")
	// The marker directory must exist for a planted command to leave a
	// marker, wherever it runs.
	if err := os.MkdirAll(e.work, 0o755); err != nil {
		t.Fatal(err)
	}
	r := p.mustAgentbox(nil, "shell", "--", "bash", "-c", attackScript, "attack", marker)
	t.Logf("the attack in the sandbox:\n%s", r.stdout)
	var refusedObjects []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if id, ok := strings.CutPrefix(line, "refused-object "); ok {
			refusedObjects = append(refusedObjects, id)
			continue
		}
		if strings.HasPrefix(line, "origin") && !strings.HasSuffix(line, ": refused") {
			t.Errorf("the agent wrote into the host's git database: %s", line)
		}
		if strings.HasPrefix(line, "branch") && !strings.HasSuffix(line, ": committed") {
			t.Errorf("the attack script failed to prepare a branch: %s", line)
		}
	}

	// Bring the agent's work back.
	r = p.agentbox(nil, "fetch")
	e.timed("agentbox fetch (the attack's 24 branches)", r.took)
	t.Logf("agentbox fetch: %s", r)
	if r.code != 1 {
		t.Errorf("agentbox fetch: want exit 1 (branches refused): %s", r)
	}
	// The clone's main is the host's, unchanged: it comes back as is.
	branches := e.must(runOpt{dir: p.dir}, "git", "branch", "--list", "agentbox/*", "--format=%(refname:short)").stdout
	if got := strings.Fields(branches); strings.Join(got, " ") != "agentbox/clean agentbox/main" {
		t.Errorf("agentbox fetch created %q; want agentbox/clean and agentbox/main", got)
	}
	// Each bad branch is refused on its own row, and none of its objects
	// is in the host's repository.
	for _, want := range []string{"dotgit-tree", "deep", "zeros", "its name is 252 bytes long"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("agentbox fetch does not report %q:\n%s", want, r.stdout)
		}
	}
	if len(refusedObjects) == 0 {
		t.Errorf("the attack script made no blob of zeros")
	}
	for _, id := range refusedObjects {
		if e.run(runOpt{dir: p.dir}, "git", "cat-file", "-e", id).code == 0 {
			t.Errorf("the refused object %s is in the host's repository", id)
		}
	}

	// A bundle of the agent's whole clone, to pull and fetch from directly
	// as a user might.
	bundle := filepath.Join(e.work, "attack.bundle")
	b := p.mustAgentbox(nil, "shell", "--", "git", "-C", "/workspace", "bundle", "create", "-", "--all")
	if err := os.WriteFile(bundle, []byte(b.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(e.work, "attack-home")
	copyDir := filepath.Join(e.work, "attack-copy")
	e.must(runOpt{}, "cp", "-a", p.dir, copyDir)
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	gitconfig := "[user]\n\tname = host\n\temail = host@agentbox.invalid\n[safe]\n\tdirectory = *\n[protocol \"file\"]\n\tallow = always\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	gitEnv := []string{"HOME=" + home, "GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig"), "GIT_CONFIG_NOSYSTEM=1"}
	r = e.run(runOpt{dir: copyDir, env: gitEnv}, "bash", "-c", hostGitScript, "host-git", bundle)
	t.Logf("host git commands:\n%s", r.stdout)

	// Control: the same kind of plant, made directly in a repository's own
	// config, does fire under these commands; so the markers would show.
	control := filepath.Join(e.work, "control")
	e.must(runOpt{}, "git", "init", "-q", control)
	e.must(runOpt{dir: control, env: gitEnv}, "git", "config", "core.fsmonitor", "touch "+marker+"-control")
	e.run(runOpt{dir: control, env: gitEnv}, "git", "status")

	planted, _ := filepath.Glob(marker + "-*")
	var fired []string
	for _, m := range planted {
		if !strings.HasSuffix(m, "-control") {
			fired = append(fired, filepath.Base(m))
		}
	}
	if len(fired) > 0 {
		t.Errorf("planted commands ran on the host: %s", strings.Join(fired, ", "))
	}
	if _, err := os.Stat(marker + "-control"); err != nil {
		t.Errorf("the control plant did not fire (%v): the markers prove nothing", err)
	}
	// The layout of before, where the agent's workspace was the project
	// directory itself: the same user commands on a copy of the agent's
	// clone, work tree and .git, set the plants off.
	old := filepath.Join(e.work, "attack-old-layout")
	e.docker("cp", e.container(p.name, "agent")+":/workspace", old)
	r = e.run(runOpt{dir: old, env: gitEnv}, "bash", "-c", hostGitScript, "host-git", bundle)
	t.Logf("host git commands in the agent's own repository (the layout of before):\n%s", r.stdout)
	for _, class := range []string{"clone-config", "clone-hook", "embedded"} {
		if _, err := os.Stat(marker + "-" + class); err != nil {
			t.Errorf("with the agent's repository as the project, the plant %q did not fire: the test would not see it", class)
		}
	}

	// No host tool file holds the agent's content.
	for _, f := range []string{".vscode", ".VSCode", ".claude", ".mcp.json", ".envrc", ".pre-commit-config.yaml", ".husky", ".idea", ".gitmodules", "sub", "lib", "etc-link", "up-link",
		".devcontainer.json", "lefthook.yml", "sub2", "d"} {
		if _, err := os.Lstat(filepath.Join(p.dir, f)); err == nil {
			t.Errorf("the project directory has %s after the attack", f)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(p.dir, "agentbox.yaml")); strings.Contains(string(data), "# widened") {
		t.Errorf("agentbox.yaml holds the agent's change")
	}
	p.mustAgentbox(nil, "down")
}

// ensureUp starts the project's sandbox with the fake DNS unless it runs;
// a subtest run on its own (-run TestEndToEnd/Attack) bumps first.
func ensureUp(e *env, p *project) {
	if _, err := os.Stat(filepath.Join(p.dir, "agentbox.lock")); err != nil {
		bump(e, p, nil)
	}
	if id := e.container(p.name, "agent"); id == "" {
		p.mustAgentbox(nil, "up")
		e.trackImages(p.name)
		upWithFakeDNS(e, p, nil)
	}
}
