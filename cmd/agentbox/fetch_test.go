package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/gittest"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/iolimit"
)

// The git helpers of the tests, shared with task's (internal/testing/gittest).
var (
	gitHome   = gittest.Home
	git       = gittest.Git
	commitAll = gittest.CommitAll
	writeFile = gittest.WriteFile
)

// agentRepo clones host and makes a branch per entry of branches (name ->
// files), each started at main; it returns the clone and a bundle of it.
func agentRepo(t *testing.T, host string, branches map[string]map[string]string) (string, string) {
	t.Helper()
	agent := filepath.Join(t.TempDir(), "agent")
	git(t, ".", "clone", "-q", host, agent)
	for name, files := range branches {
		git(t, agent, "checkout", "-q", "-b", name, "main")
		commitAll(t, agent, files)
	}
	bundle := filepath.Join(t.TempDir(), "agent.bundle")
	git(t, agent, "bundle", "create", "-q", bundle, "--branches")
	return agent, bundle
}

// fakeBundle returns collaborators with which `agentbox fetch` reads bundle
// with cfg instead of asking the sandbox.
func fakeBundle(t *testing.T, bundle string, cfg *config.Config, err error) deps {
	t.Helper()
	d := testDeps()
	d.bundle = func(ctx context.Context, dir string, w io.Writer) (*config.Config, error) {
		if err != nil {
			return nil, err
		}
		data, rerr := os.ReadFile(bundle)
		if rerr != nil {
			t.Fatal(rerr)
		}
		_, werr := w.Write(data)
		return cfg, werr
	}
	return d
}

// table turns printed rows into single-spaced lines.
func table(out string) string {
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	return strings.Join(rows, "\n")
}

func TestFetchCommand(t *testing.T) {
	gitHome(t)
	host := filepath.Join(t.TempDir(), "host")
	git(t, ".", "init", "-q", host)
	commitAll(t, host, map[string]string{"README.md": "hi\n"})
	_, bundle := agentRepo(t, host, map[string]map[string]string{
		"feature":  {"src/a.go": "package a\n"},
		"evil":     {".vscode/tasks.json": "{}\n", ".vscode/\x1b[2Jclear": "x\n"},
		"adr":      {"docs/adr/1.md": "x\n"},
		"settings": {".claude/settings.json": "{}\n"},
	})
	cfg := &config.Config{Workspace: "/workspace", ReadOnly: []string{"docs/adr"}, Writable: []string{".claude"}}
	d := fakeBundle(t, bundle, cfg, nil)

	stdout, stderr, code := runInDeps(t, d, host, "fetch")
	if code != exitError || !strings.Contains(stderr, "agentbox: 2 of 5 branches refused") {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	tab := table(stdout)
	for _, want := range []string{
		"BRANCH STATUS COMMITS REASONS",
		"feature new 1 -",
		"main empty 0 -", // no commit beyond the host's: says so (issue 20)
		"settings new 1 -",
		": protected path .vscode: VS Code runs tasks.json",
		"adr refused 1 ",
		"docs/adr/1.md: read-only path docs/adr (workspace.readonly)",
		`.vscode/\x1b[2Jclear: protected path .vscode`, // escaped: termsafe
	} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "\x1b") {
		t.Errorf("a terminal escape from a file name reached stdout:\n%q", stdout)
	}
	for ref, want := range map[string]bool{"agentbox/feature": true, "agentbox/settings": true, "agentbox/evil": false, "agentbox/adr": false} {
		_, err := exec.Command("git", "-C", host, "rev-parse", "--verify", "-q", ref).Output()
		if (err == nil) != want {
			t.Errorf("%s written: %v, want %v", ref, err == nil, want)
		}
	}

	stdout, _, code = runInDeps(t, d, host, "fetch", "--json", "--prefix", "sandbox")
	var got struct {
		Branches []struct {
			Name, Ref, Old, New, Status string
			Commits                     int
			Reasons                     []struct{ Commit, Path, Why string }
		}
		Refused int
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != exitError {
		t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
	}
	if got.Refused != 2 || len(got.Branches) != 5 {
		t.Fatalf("%+v", got)
	}
	for _, b := range got.Branches {
		if !strings.HasPrefix(b.Ref, "refs/heads/sandbox/") {
			t.Errorf("ref %s", b.Ref)
		}
		if b.Name == "evil" && (b.Status != "refused" || len(b.Reasons) != 2 || b.Reasons[0].Commit == "" || b.Commits != 1) {
			t.Errorf("evil: %+v", b)
		}
		// The fetch above brought feature's commit into agentbox/: written
		// to sandbox/, it brings nothing new.
		if b.Name == "feature" && (b.Status != "empty" || b.Commits != 0 || b.Reasons == nil || len(b.New) != 40) {
			t.Errorf("feature: %+v", b)
		}
		if b.Name == "main" && (b.Status != "empty" || b.Commits != 0 || b.Ref != "refs/heads/sandbox/main") {
			t.Errorf("main, no commit of its own: %+v, want status empty", b)
		}
	}

	// Only acceptable branches: exit 0, and a second fetch changes nothing.
	_, ok := agentRepo(t, host, map[string]map[string]string{"feature": {"src/a.go": "package a // again\n"}})
	d = fakeBundle(t, ok, cfg, nil)
	for _, status := range []string{"new", "unchanged"} {
		stdout, stderr, code = runInDeps(t, d, host, "fetch", "--prefix", "refs/remotes/agent/")
		if code != exitOK || !strings.Contains(table(stdout), "feature "+status) || !strings.Contains(stderr, "agentbox: 2 branches in refs/remotes/agent/") {
			t.Errorf("exit %d, stderr %q, want %s:\n%s", code, stderr, status, stdout)
		}
	}
}

func TestFetchCommandErrors(t *testing.T) {
	gitHome(t)
	host := filepath.Join(t.TempDir(), "host")
	git(t, ".", "init", "-q", host)
	commitAll(t, host, map[string]string{"README.md": "hi\n", "sub/x": "x\n"})
	_, bundle := agentRepo(t, host, nil)
	cfg := &config.Config{Workspace: "/workspace"}
	for _, tt := range []struct {
		name   string
		args   []string
		source error
		code   int
		want   string
	}{
		{"source fails", []string{"fetch"}, errors.New("docker is not installed"), exitError, "docker is not installed"},
		{"below the top", []string{"fetch", "-C", "sub"}, nil, exitError, "needs the project directory to be the top of its git repository"},
		{"not a repository", []string{"fetch", "-C", t.TempDir()}, nil, exitError, "is not in a git work tree"},
		{"bad prefix", []string{"fetch", "--prefix", "refs/heads/"}, nil, exitError, "invalid destination prefix"},
		{"argument", []string{"fetch", "main"}, nil, exitUsage, "unknown command"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := fakeBundle(t, bundle, cfg, tt.source)
			stdout, stderr, code := runInDeps(t, d, host, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want %d and %q", code, stderr, stdout, tt.code, tt.want)
			}
		})
	}
}

// TestFetchThroughCompose runs the real bundle source against a fake docker
// whose `compose exec` prints a bundle: the command it runs in the agent
// container, and its failure.
func TestFetchThroughCompose(t *testing.T) {
	gitHome(t)
	dir := project(t, "agent-claude")
	git(t, dir, "init", "-q")
	commitAll(t, dir, nil)
	_, bundle := agentRepo(t, dir, map[string]map[string]string{"feature": {"src/a.go": "package a\n"}})
	bin := t.TempDir()
	log := filepath.Join(bin, "argv.log")
	writeFile(t, filepath.Join(bin, "docker"), []byte(`#!/bin/sh
echo "$*" >> `+log+`
case "$1 $2" in
  "compose version") echo 2.40.3; exit 0 ;;
  "version --format") echo 28.2.2; exit 0 ;;
  "ps --filter") echo "egress-id balanced"; exit 0 ;; # the sandbox runs
esac
case "$*" in
  *" exec -T agent git -C /workspace bundle create - --branches")
    [ -e `+bin+`/down ] && { echo "service \"agent\" is not running" >&2; exit 1; }
    exec cat `+bundle+` ;;
esac
exit 3
`))
	os.Chmod(filepath.Join(bin, "docker"), 0o755)
	t.Setenv("PATH", bin+":/usr/bin:/bin")

	stdout, stderr, code := runIn(t, dir, "fetch")
	if code != exitOK || !strings.Contains(table(stdout), "feature new 1 -") {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	data, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if want := "compose -f .agentbox/docker-compose.yml -p agentbox exec -T agent git -C /workspace bundle create - --branches"; lines[len(lines)-1] != want {
		t.Errorf("ran %q, want %q", lines[len(lines)-1], want)
	}

	writeFile(t, filepath.Join(bin, "down"), nil)
	_, stderr, code = runIn(t, dir, "fetch")
	if code != exitError || !strings.Contains(stderr, `(is the sandbox up? agentbox up): service "agent" is not running`) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestLimitWriter(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	lw := &iolimit.Writer{W: &sb, Left: 5}
	if n, err := lw.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	if _, err := lw.Write([]byte("def")); err == nil || !lw.Over || sb.String() != "abc" {
		t.Errorf("err %v, over %v, wrote %q", err, lw.Over, sb.String())
	}
	var hb iolimit.Head
	if n, _ := hb.Write(make([]byte, 100<<10)); n != 100<<10 || hb.Len() != 64<<10 {
		t.Errorf("iolimit.Head kept %d of %d", hb.Len(), n)
	}
}

// TestFetchCommandBadBranches: a branch whose name git cannot store and
// one whose tree git's fsck refuses are refused on their own rows; the
// other branches are written, and the table carries neither the long name
// whole nor a control.
func TestFetchCommandBadBranches(t *testing.T) {
	gitHome(t)
	host := filepath.Join(t.TempDir(), "host")
	git(t, ".", "init", "-q", host)
	commitAll(t, host, map[string]string{"README.md": "hi\n"})
	agent, bundle := agentRepo(t, host, map[string]map[string]string{"feature": {"src/a.go": "package a\n"}})
	// A tree with a .git entry, made with plumbing (git add refuses it).
	mk := func(entries string) string {
		cmd := exec.Command("git", "-C", agent, "mktree")
		cmd.Stdin = strings.NewReader(entries)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	blob := git(t, agent, "rev-parse", "main:README.md")
	sub := mk("100644 blob " + blob + "\tconfig\n")
	c := git(t, agent, "commit-tree", "-p", "main", "-m", "dotgit", mk("040000 tree "+sub+"\t.git\n"))
	git(t, agent, "update-ref", "refs/heads/dotgit", c)
	git(t, agent, "bundle", "create", "-q", bundle, "--branches")
	// A name of 300 bytes with a terminal escape, added to the header.
	data, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	long := "\x1b[2J" + strings.Repeat("n", 300)
	data = []byte(strings.Replace(string(data), "\n\n", "\n"+c+" refs/heads/"+long+"\n\n", 1))
	writeFile(t, bundle, data)

	d := fakeBundle(t, bundle, &config.Config{Workspace: "/workspace"}, nil)
	stdout, stderr, code := runInDeps(t, d, host, "fetch")
	if code != exitError || !strings.Contains(stderr, "agentbox: 2 of 4 branches refused") {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	tab := table(stdout)
	for _, want := range []string{
		"feature new 1 -",
		"dotgit refused 0 git's fsck refuses its objects (error: object ",
		": hasDotgit: contains '.git'); the host cannot take it: rewrite or delete the branch in the agent's clone",
		`\x1b[2Jnnnn`,
		`... refused 0 the agent's clone's branch #4 (in the order of git for-each-ref refs/heads/): its name`,
		"its name is 304 bytes long, longer than 250",
	} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "\x1b") || strings.Contains(stdout, long[:120]) {
		t.Errorf("the long name reached stdout whole or raw:\n%q", stdout)
	}
	if got := git(t, host, "for-each-ref", "--format=%(refname)", "refs/heads/agentbox/"); got != "refs/heads/agentbox/feature\nrefs/heads/agentbox/main" {
		t.Errorf("written: %s", got)
	}
}
