package task

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/gittest"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
)

// armedClone is a task's clone that has a branch agentbox/t and arms every
// way git could run a program of the clone's: filters (in info/attributes
// and in the tree's .gitattributes), fsmonitor, every hook (in hooks/ and
// in core.hooksPath), aliases, pagers, diff drivers, an included config, a
// populated submodule with its own, and a tracked file whose stat no longer
// matches the index (so that status reads it through the clean filter).
// Each program touches a file in marks.
func armedClone(t *testing.T, marks string) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "workspace")
	gittest.Git(t, ".", "init", "-q", ws)
	gittest.CommitAll(t, ws, map[string]string{"a.txt": "a\n", "b.bin": "b\n"})
	gittest.Git(t, ws, "checkout", "-q", "-b", "agentbox/t")
	gittest.CommitAll(t, ws, map[string]string{"c.txt": "c\n"})

	sub := filepath.Join(ws, "sub")
	gittest.Git(t, ".", "init", "-q", sub)
	gittest.CommitAll(t, sub, map[string]string{"s.txt": "s\n"})
	gittest.Git(t, ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "./sub", "sub")
	gittest.Git(t, ws, "commit", "-qm", "sub")

	run := func(what string) string { return "touch " + filepath.Join(marks, what) }
	armConfig := func(repo, prefix string) {
		for k, v := range map[string]string{
			"core.fsmonitor": run(prefix + "fsmonitor"), "core.pager": run(prefix + "pager"), "pager.status": run(prefix + "pager-status"),
			"core.editor": run(prefix + "editor"), "core.sshCommand": run(prefix + "ssh"), "core.askPass": run(prefix + "askpass"),
			"core.hooksPath": filepath.Join(repo, "myhooks"), "core.untrackedCache": "true", "core.preloadIndex": "true",
			"filter.x.clean": run(prefix + "clean"), "filter.x.smudge": run(prefix + "smudge"), "filter.x.process": run(prefix + "process"),
			"filter.x.required": "true", "filter.y.clean": run(prefix + "clean-tree"), "filter.lfs.clean": run(prefix + "clean-lfs"),
			"diff.external": run(prefix + "diff-external"), "diff.x.textconv": run(prefix + "textconv"), "diff.x.command": run(prefix + "diff-command"),
			"alias.status": "!" + run(prefix+"alias-status"), "alias.bundle": "!" + run(prefix+"alias-bundle"),
			"alias.update-ref": "!" + run(prefix+"alias-update-ref"), "uploadpack.packObjectsHook": run(prefix + "pack-objects-hook"),
			"pack.threads": "1", "gpg.program": run(prefix + "gpg"), "credential.helper": "!" + run(prefix+"credential"),
			"core.gitProxy": run(prefix + "proxy"), "submodule.recurse": "true", "status.submoduleSummary": "true",
			"diff.ignoreSubmodules": "none", "include.path": filepath.Join(repo, "included"),
			"includeIf.gitdir:/.path": filepath.Join(repo, "included"),
		} {
			gittest.Git(t, repo, "config", k, v)
		}
		gittest.WriteFile(t, filepath.Join(repo, "included"), []byte("[core]\n\tfsmonitor = "+run(prefix+"included")+"\n"))
		gittest.WriteFile(t, filepath.Join(repo, "info", "attributes"), []byte("* filter=x diff=x merge=x\n"))
		for _, dir := range []string{"hooks", "myhooks"} {
			for _, h := range []string{"post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc",
				"post-rewrite", "pre-push", "post-update", "update", "push-to-checkout", "fsmonitor-watchman"} {
				p := filepath.Join(repo, dir, h)
				gittest.WriteFile(t, p, []byte("#!/bin/sh\n"+run(prefix+dir+"-"+h)+"\n"))
				if err := os.Chmod(p, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	armConfig(filepath.Join(ws, ".git"), "")
	armConfig(gittest.Git(t, sub, "rev-parse", "--absolute-git-dir"), "sub-")
	// The tree's own attributes, uncommitted (the agent's too), and a
	// changed file in the submodule.
	gittest.WriteFile(t, filepath.Join(ws, ".gitattributes"), []byte("* filter=y diff=x\n*.bin filter=lfs\n"))
	gittest.WriteFile(t, filepath.Join(ws, "sub", "s.txt"), []byte("changed\n"))
	gittest.WriteFile(t, filepath.Join(ws, "left.txt"), []byte("left\n"))
	// The same content, another mtime: status must read it again.
	for _, f := range []string{"a.txt", "b.bin", "sub/s.txt"} {
		old := mustStat(t, filepath.Join(ws, f)).ModTime().Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(ws, f), old, old); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// TestBundleScriptRunsNothing: the collection lists the clone's status and
// bundles its branch without running any program the clone names (the
// script runs here as in the collect container, with a hostile GIT_*
// environment besides).
func TestBundleScriptRunsNothing(t *testing.T) {
	gittest.Home(t)
	marks := t.TempDir()
	ws := armedClone(t, marks)
	want := gittest.Git(t, ws, "rev-parse", "agentbox/t")

	cmd := exec.Command("sh", "-c", BundleScript(ws), "sh", "t")
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir(),
		"GIT_CONFIG_PARAMETERS='core.fsmonitor'='touch "+filepath.Join(marks, "env-parameters")+"'",
		"GIT_EXTERNAL_DIFF=touch "+filepath.Join(marks, "env-external-diff"), "GIT_PAGER=touch "+filepath.Join(marks, "env-pager"),
		"GIT_DIR="+filepath.Join(ws, ".git"), "GIT_CONFIG_GLOBAL="+filepath.Join(ws, ".git", "included"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	left, _ := os.ReadDir(marks)
	var ran []string
	for _, e := range left {
		ran = append(ran, e.Name())
	}
	if len(ran) > 0 {
		t.Errorf("the collection ran the clone's programs: %v", ran)
	}
	if err != nil {
		t.Fatalf("the collection failed: %v\n%s", err, stderr.String())
	}
	status := stderr.String()
	for _, l := range []string{"status ?? .gitattributes", "status ?? left.txt"} {
		if !strings.Contains(status, l+"\n") {
			t.Errorf("the status lacks %q:\n%s", l, status)
		}
	}
	// The bundle holds the branch, named t.
	bundle := filepath.Join(t.TempDir(), "b.bundle")
	gittest.WriteFile(t, bundle, stdout.Bytes())
	if heads := gittest.Git(t, ws, "bundle", "list-heads", bundle); heads != want+" refs/heads/t" {
		t.Errorf("the bundle's heads: %q, want %s refs/heads/t", heads, want)
	}
	host := filepath.Join(t.TempDir(), "host")
	gittest.Git(t, ".", "init", "-q", "--bare", host)
	gittest.Git(t, host, "fetch", "-q", bundle, "t:t")
	if got := gittest.Git(t, host, "rev-parse", "t"); got != want {
		t.Errorf("fetched %s, want %s", got, want)
	}
}

// TestCollectCommand: the collect container is locked down at least as the
// agent's: no capabilities, no new privileges, the agent's uid, no
// network, a read-only root, and pids, memory and CPU limits no higher
// than the agent's.
func TestCollectCommand(t *testing.T) {
	for _, tc := range []struct {
		name           string
		cfg            config.Config
		mem, pids, cpu string
	}{
		{"defaults", config.Config{Name: "acme", UID: 1000, GID: 1000, Memory: "4g", Pids: 1024}, "4g", "64", "1"},
		{"tight", config.Config{Name: "acme", UID: 1000, GID: 1000, Memory: "256m", Pids: 20, CPUs: 0.5}, "256m", "20", "0.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := " run " + strings.Join(collectArgs(&tc.cfg, &Record{Name: "t1", Project: "acme-task-t1"}), " ")
			for _, want := range []string{" run --rm ", " --network none ", " --user 1000:1000 ", " --cap-drop ALL ",
				" --security-opt no-new-privileges ", " --read-only ", " --pids-limit " + tc.pids + " ",
				" --memory " + tc.mem + " ", " --memory-swap " + tc.mem + " ", " --cpus " + tc.cpu + " ",
				" -v acme-task-t1_" + generator.WorkspaceVolume + ":/workspace:ro ", " --entrypoint sh acme-agent -c "} {
				if !strings.Contains(args, want) {
					t.Errorf("the collect container lacks %q: %s", want, args)
				}
			}
		})
	}
}
