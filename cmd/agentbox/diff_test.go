package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/golden"
	"github.com/agentbox-dev/agentbox/review"
)

const diffDir = "../../testdata/diff"

// The diff golden cases: testdata/diff/<case>/ holds base/ and head/, each
// with agentbox.yaml and agentbox.lock (a side without a lock takes
// testdata/diff/agentbox.lock; base/ without agentbox.yaml is a commit
// without one). The test commits base/ in a fresh git repository, puts
// head/ in its working tree and runs `agentbox diff HEAD`, or diff and the words of
// the optional file "args" (which replaces HEAD). stdout must equal want.txt, stderr stderr.txt
// (when it exists), and the exit code the optional file exit-code (else 0).
func TestGoldenDiff(t *testing.T) {
	gitHome(t)
	cases, err := os.ReadDir(diffDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		if c.IsDir() {
			n++
			t.Run(c.Name(), func(t *testing.T) { runDiffCase(t, filepath.Join(diffDir, c.Name())) })
		}
	}
	if n < 15 {
		t.Errorf("%d diff cases, want at least 15", n)
	}
}

func runDiffCase(t *testing.T, caseDir string) {
	caseDir, err := filepath.Abs(caseDir)
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(repo, "README"), []byte("a project\n"))
	copySide(t, filepath.Join(caseDir, "base"), repo)
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	for _, name := range []string{"agentbox.yaml", "agentbox.lock"} {
		_ = os.Remove(filepath.Join(repo, name))
	}
	copySide(t, filepath.Join(caseDir, "head"), repo)

	args := []string{"diff", "HEAD"}
	if words := caseLines(t, filepath.Join(caseDir, "args")); words != nil {
		args = append([]string{"diff"}, strings.Fields(strings.Join(words, " "))...)
	}
	stdout, stderr, code := runIn(t, repo, args...)
	wantCode := 0
	if b, err := os.ReadFile(filepath.Join(caseDir, "exit-code")); err == nil {
		wantCode, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if code != wantCode {
		t.Errorf("%v: exit code %d, want %d; stderr:\n%s", args, code, wantCode, stderr)
	}
	golden.CompareFile(t, filepath.Join(caseDir, "want.txt"), []byte(stdout))
	if wantErr := filepath.Join(caseDir, "stderr.txt"); fileExists(wantErr) || (golden.Update() && stderr != "") {
		golden.CompareFile(t, wantErr, []byte(stderr))
	}
}

// copySide copies one side of a diff case into the repository.
func copySide(t *testing.T, side, repo string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(side, "agentbox.yaml"))
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "agentbox.yaml"), data)
	lock, err := os.ReadFile(filepath.Join(side, "agentbox.lock"))
	if os.IsNotExist(err) {
		lock, err = os.ReadFile(filepath.Join(diffDir, "agentbox.lock"))
	}
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "agentbox.lock"), lock)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestDiffTwoCommits runs diff against a repository with two commits: the
// default base (HEAD, no upstream), an explicit older revision, the
// working tree's own change, and an upstream branch's merge base.
func TestDiffTwoCommits(t *testing.T) {
	gitHome(t)
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	lock, err := os.ReadFile(filepath.Join(diffDir, "agentbox.lock"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "agentbox.lock"), lock)
	writeFile(t, filepath.Join(repo, "agentbox.yaml"), []byte("agent: claude\n"))
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "one")
	writeFile(t, filepath.Join(repo, "agentbox.yaml"), []byte("agent: claude\nnetwork:\n  domains: [example.com]\n"))
	git(t, repo, "commit", "-q", "-am", "two")

	rows := func(args ...string) []review.DiffRow {
		t.Helper()
		stdout, stderr, code := runIn(t, repo, append([]string{"diff", "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("diff %v: exit %d: %s", args, code, stderr)
		}
		var r review.Diff
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("diff %v: %v\n%s", args, err, stdout)
		}
		return r.Rows
	}
	if r := rows(); len(r) != 0 {
		t.Errorf("diff against HEAD with a clean tree: %v", r)
	}
	r := rows("HEAD~1")
	if len(r) != 1 || r[0].Kind != review.Widens || r[0].Subject != "example.com:443" || r[0].Line != 3 {
		t.Errorf("diff HEAD~1: %+v", r)
	}
	git(t, repo, "checkout", "-q", "-b", "topic", "HEAD~1")
	git(t, repo, "branch", "-q", "--set-upstream-to", "main")
	writeFile(t, filepath.Join(repo, "agentbox.yaml"), []byte("agent: claude\nresources: {pids: 64}\n"))
	r = rows() // the merge base with main is the first commit
	if len(r) != 1 || r[0].Kind != review.Narrows || r[0].What != "pids" {
		t.Errorf("diff against the merge base: %+v", r)
	}
}

// TestGoldenExplain runs explain on every golden case that generates: the
// text output in explain.txt, and for a few cases markdown and JSON.
func TestGoldenExplain(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join(goldenDir, "*", "want"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, want := range cases {
		caseDir, _ := filepath.Abs(filepath.Dir(want))
		t.Run(filepath.Base(caseDir), func(t *testing.T) {
			work := setupCase(t, caseDir)
			formats := map[string]string{"text": "explain.txt"}
			if fileExists(filepath.Join(caseDir, "explain.md")) || fileExists(filepath.Join(caseDir, "explain.json")) {
				formats["markdown"], formats["json"] = "explain.md", "explain.json"
			}
			for format, file := range formats {
				stdout, stderr, code := runIn(t, work, "explain", "--format", format)
				if code != 0 {
					t.Fatalf("explain --format %s: exit %d: %s", format, code, stderr)
				}
				golden.CompareFile(t, filepath.Join(caseDir, file), []byte(stdout))
			}
		})
	}
}

// TestDiffErrors: outside a git repository, and a bad flag value.
func TestDiffErrors(t *testing.T) {
	gitHome(t)
	dir := t.TempDir()
	copySide(t, filepath.Join(diffDir, "no-change", "head"), dir)
	_, stderr, code := runIn(t, dir, "diff")
	if code != exitError || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "not in a git repository") {
		t.Errorf("outside git: exit %d, stderr %q", code, stderr)
	}
	for _, args := range [][]string{{"diff", "--fail-on", "narrow"}, {"diff", "--format", "html"}, {"explain", "--format", "yaml"}} {
		if _, stderr, code := runIn(t, dir, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, stderr)
		}
	}
}

// A repository with no commit yet has no base: everything is added.
func TestDiffNoCommitYet(t *testing.T) {
	gitHome(t)
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	lock, err := os.ReadFile(filepath.Join(diffDir, "agentbox.lock"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "agentbox.lock"), lock)
	writeFile(t, filepath.Join(repo, "agentbox.yaml"), []byte("agent: claude\n"))
	stdout, stderr, code := runIn(t, repo, "diff", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r review.Diff
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.Summary["widens"] == 0 || r.Summary["narrows"] != 0 {
		t.Errorf("want everything added: %+v", r.Summary)
	}
	// A revision named on the command line must still exist.
	if _, stderr, code := runIn(t, repo, "diff", "HEAD"); code != exitError || !strings.Contains(stderr, "unknown revision") {
		t.Errorf("diff HEAD with no commit: exit %d: %s", code, stderr)
	}
}
