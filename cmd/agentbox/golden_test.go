package main

import (
	"bytes"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/golden"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

const goldenDir = "../../testdata/golden"

// The golden cases: testdata/golden/<case>/ holds agentbox.yaml (and
// agentbox.lock), and either want/ (the generated tree) or stderr.txt (an
// expected failure, exit code 1 unless exit-code says otherwise). A case is
// generated in a copy of its directory that is a git checkout (.git/hooks and
// .git/config) unless the case has a file named "nogit". A file named
// "symlinks" lists links to make in the copy, one "PATH TARGET" a line
// (PATH replaced if it exists); a file named "mkdirs" lists directories.
// The images' programs, the same for every case, have one golden each:
// testdata/egress-program, testdata/agent-program.
func TestGolden(t *testing.T) {
	cases, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) { runGolden(t, filepath.Join(goldenDir, c.Name())) })
	}
}

func runGolden(t *testing.T, caseDir string) {
	caseDir, err := filepath.Abs(caseDir) // the CLI runs in another directory
	if err != nil {
		t.Fatal(err)
	}
	work := setupCase(t, caseDir)
	before := golden.ReadTree(t, work)
	stdout, stderr, code := runIn(t, work, "generate")

	wantStderr := filepath.Join(caseDir, "stderr.txt")
	if _, err := os.Stat(wantStderr); err == nil || (golden.Update() && code != 0) {
		wantCode := exitError
		if b, err := os.ReadFile(filepath.Join(caseDir, "exit-code")); err == nil {
			wantCode, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if code != wantCode {
			t.Errorf("exit code %d, want %d; stderr:\n%s", code, wantCode, stderr)
		}
		golden.CompareFile(t, wantStderr, []byte(stderr))
		if after := golden.ReadTree(t, work); !sameTree(before, after) {
			t.Errorf("a failed generate changed files on disk")
		}
		return
	}
	if code != exitOK {
		t.Fatalf("generate exited %d:\n%s", code, stderr)
	}
	if stdout == "" {
		t.Errorf("generate printed no changes on a fresh directory")
	}
	got := map[string][]byte{}
	for p, data := range golden.ReadTree(t, work) {
		if generator.LocalProgram(p) {
			// The images' programs, the same for every case: one golden,
			// testdata/egress-program and testdata/agent-program beside
			// goldenDir.
			golden.CompareFile(t, filepath.Join(filepath.Dir(filepath.Dir(caseDir)), strings.TrimPrefix(p, generator.OutDir+"/")), data)
			continue
		}
		if strings.HasPrefix(p, ".agentbox/") || strings.HasPrefix(p, ".devcontainer/") {
			got[p] = data
		}
	}
	golden.CompareTree(t, filepath.Join(caseDir, "want"), got)
	if fi, err := os.Stat(filepath.Join(work, generator.EgressProgramDir, "entrypoint.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("entrypoint.sh is not executable: %v %v", fi.Mode(), err)
	}

	// A second run changes nothing, and --check agrees.
	if stdout, stderr, code := runIn(t, work, "generate"); code != exitOK || stdout != "" {
		t.Errorf("second generate: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, stderr, code := runIn(t, work, "generate", "--check"); code != exitOK {
		t.Errorf("generate --check after generate: exit %d: %s", code, stderr)
	}
	// A fresh clone has no programs (they are not committed, but for their
	// .gitignore files): --check passes, and generate writes them again.
	for p := range golden.ReadTree(t, work) {
		if generator.LocalProgram(p) {
			if err := os.Remove(filepath.Join(work, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, stderr, code := runIn(t, work, "generate", "--check"); code != exitOK {
		t.Errorf("generate --check without the egress program: exit %d: %s", code, stderr)
	}
	if stdout, stderr, code := runIn(t, work, "generate"); code != exitOK || !strings.Contains(stdout, generator.EgressProgramDir+"/entrypoint.sh") ||
		!strings.Contains(stdout, generator.RequestScript) {
		t.Errorf("generate without the egress program: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// setupCase copies a case's inputs into a fresh directory named after it.
func setupCase(t *testing.T, caseDir string) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), filepath.Base(caseDir))
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"agentbox.yaml", "agentbox.lock"} {
		data, err := os.ReadFile(filepath.Join(caseDir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(work, name), data)
	}
	if _, err := os.Stat(filepath.Join(caseDir, "nogit")); os.IsNotExist(err) {
		writeFile(t, filepath.Join(work, ".git/config"), []byte("[core]\n"))
		if err := os.MkdirAll(filepath.Join(work, ".git/hooks"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range caseLines(t, filepath.Join(caseDir, "mkdirs")) {
		if err := os.MkdirAll(filepath.Join(work, line), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range caseLines(t, filepath.Join(caseDir, "symlinks")) {
		path, target, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("symlinks: want PATH TARGET, got %q", line)
		}
		full := filepath.Join(work, path)
		if err := os.RemoveAll(full); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

// caseLines returns the non-empty lines of a case's optional file.
func caseLines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	return lines
}

// runIn runs the CLI in-process with dir as the working directory.
func runIn(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runInDeps(t, testDeps(), dir, args...)
}

// runInDeps runs the CLI in-process with d and dir as the working directory.
func runInDeps(t *testing.T, d deps, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Chdir(dir)
	return runDeps(t, d, args...)
}

func sameTree(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for p, data := range a {
		if !bytes.Equal(b[p], data) {
			return false
		}
	}
	return true
}

// TestGoldenRulesetsLoad checks every golden ruleset, with the sets it
// includes, with `nft -c`, which parses and validates a ruleset against the
// kernel without applying it.
func TestGoldenRulesetsLoad(t *testing.T) {
	rulesets, err := filepath.Glob(filepath.Join(goldenDir, "*/want/.agentbox/egress/rules.nft"))
	if err != nil || len(rulesets) == 0 {
		t.Fatalf("no golden rulesets found: %v", err)
	}
	testenv.RequireRoot(t)
	nft := testenv.RequireProgram(t, "nft")
	// Each includes the egress program's common.nft, whose golden is one.
	sets, err := filepath.Abs(filepath.Join(goldenDir, "..", "egress-program", "common.nft"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rulesets {
		data, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(nft, "-c", "-f", "-")
		cmd.Stdin = strings.NewReader(strings.Replace(string(data), `include "`+firewall.CommonPath+`"`, `include "`+sets+`"`, 1))
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(data), firewall.CommonPath) {
			t.Errorf("nft -c -f %s: %v\n%s", r, err, out)
		}
	}
}
