package gitgate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/gittest"
)

// isolate points HOME and git's global configuration at throwaway files, so
// that neither the user's configuration nor the system's changes a test.
func isolate(t testing.TB) {
	t.Helper()
	gittest.Home(t)
	t.Setenv("XDG_CONFIG_HOME", os.Getenv("HOME"))
}

func writeTestFile(t testing.TB, path, content string) {
	t.Helper()
	gittest.WriteFile(t, path, []byte(content))
}

// gitT runs git in dir and returns its trimmed stdout; a failure fails the
// test.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitE(dir, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

func gitE(dir string, args ...string) (string, error) {
	out, err := gitCmd(dir, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func gitCmd(dir string, args ...string) *exec.Cmd {
	return exec.Command("git", append([]string{"-C", dir}, args...)...)
}

// newHost makes a host repository with one commit on main.
func newHost(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "host")
	gitT(t, ".", "init", "-q", dir)
	writeTestFile(t, filepath.Join(dir, "README.md"), "hello\n")
	writeTestFile(t, filepath.Join(dir, "docs/guide.md"), "guide\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-qm", "first")
	return dir
}

// newAgent clones host as the sandbox does: the agent's own repository.
func newAgent(t testing.TB, host string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agent")
	gitT(t, ".", "clone", "-q", host, dir)
	return dir
}

// commitFiles writes files (path -> content) in repo and commits them on the
// current branch; it returns the commit.
func commitFiles(t *testing.T, repo string, files map[string]string, msg string) string {
	t.Helper()
	for p, c := range files {
		writeTestFile(t, filepath.Join(repo, p), c)
	}
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-qm", msg)
	return gitT(t, repo, "rev-parse", "HEAD")
}

// branch starts branch at main in repo.
func branch(t *testing.T, repo, name string) {
	t.Helper()
	gitT(t, repo, "checkout", "-q", "-B", name, "main")
}

// bundleOf bundles every branch of repo.
func bundleOf(t testing.TB, repo string, extra ...string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "agent.bundle")
	gitT(t, repo, append([]string{"bundle", "create", "-q", f, "--branches"}, extra...)...)
	return f
}

// fetchT fetches the bundle of agent into host and fails on error.
func fetchT(t *testing.T, host, agent string, p Policy) *Result {
	t.Helper()
	res, err := Fetch(context.Background(), FetchOptions{Dir: host, Bundle: bundleOf(t, agent), Policy: p})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	checkNoIncoming(t, host)
	return res
}

func checkNoIncoming(t *testing.T, host string) {
	t.Helper()
	if refs := gitT(t, host, "for-each-ref", incoming); refs != "" {
		t.Errorf("incoming refs left behind:\n%s", refs)
	}
}

// byName returns the branch of res called name.
func byName(t *testing.T, res *Result, name string) Branch {
	t.Helper()
	for _, b := range res.Branches {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("no branch %q in %+v", name, res.Branches)
	return Branch{}
}

// refOf returns what ref points to in repo, or "".
func refOf(t *testing.T, repo, ref string) string {
	t.Helper()
	out, err := gitE(repo, "rev-parse", "--verify", "-q", ref)
	if err != nil {
		return ""
	}
	return out
}

// wantRefused checks that b was refused with a reason whose path and text
// contain path and why, and that its destination was not written.
func wantRefused(t *testing.T, host string, b Branch, path, why string) {
	t.Helper()
	if b.Status != StatusRefused {
		t.Errorf("branch %s: status %s, want refused; reasons %+v", b.Name, b.Status, b.Reasons)
		return
	}
	found := false
	for _, r := range b.Reasons {
		if strings.Contains(r.Path, path) && strings.Contains(r.Why, why) {
			found = true
		}
	}
	if !found {
		t.Errorf("branch %s: no reason with path %q and %q in %+v", b.Name, path, why, b.Reasons)
	}
	if got := refOf(t, host, b.Ref); got != b.Old {
		t.Errorf("branch %s: refused but %s moved from %q to %q", b.Name, b.Ref, b.Old, got)
	}
}

// wantWritten checks that b has status and that its destination holds its
// commit.
func wantWritten(t *testing.T, host string, b Branch, status Status) {
	t.Helper()
	if b.Status != status {
		t.Errorf("branch %s: status %s, want %s; reasons %+v", b.Name, b.Status, status, b.Reasons)
	}
	if got := refOf(t, host, b.Ref); got != b.New {
		t.Errorf("branch %s: %s is %q, want %q", b.Name, b.Ref, got, b.New)
	}
}
