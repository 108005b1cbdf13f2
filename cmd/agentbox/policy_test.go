package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
)

const policyYAML = `name: demo
agent: none
# What the agent may reach.
network:
  domains:
    - "api.example.com"   # the API
  ports: [443]
elevation:
  never: [secret.example.com]
profiles:
  work:
    from: locked
    network:
      domains: [work.example.com]
`

// policyProject is a project with policyYAML, generated, and deps with a
// fake egress answering replies; the sandbox runs profile running ("" for
// none).
func policyProject(t *testing.T, running string, replies map[string]fakeReply) (string, deps, *fakeEgress, string) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir, d, eg, log := allowProject(t, "", replies)
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), []byte(policyYAML))
	lock, err := os.ReadFile("../../testdata/golden/agent-none/agentbox.lock")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "agentbox.lock"), lock)
	if _, stderr, code := runDeps(t, d, "-C", dir, "generate"); code != 0 {
		t.Fatalf("generate: %s", stderr)
	}
	eg.running = running
	d.profile = func(context.Context, string, string) (string, error) {
		if running == "" {
			return "", errors.New("no egress container runs")
		}
		return running, nil
	}
	d.up = func(context.Context, string, string, io.Writer, io.Writer) error {
		t.Error("agentbox up was run")
		return nil
	}
	return dir, d, eg, log
}

func readYAML(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "agentbox.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// upToDate checks that the generated files are what agentbox.yaml
// compiles to.
func upToDate(t *testing.T, dir string) {
	t.Helper()
	c, err := generator.Compile(dir, generator.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff, err := generator.Diff(dir, c.Files); err != nil || diff != "" {
		t.Errorf("the generated files are not up to date: %v\n%s", err, diff)
	}
}

func TestPolicyAddApplies(t *testing.T) {
	dir, d, eg, log := policyProject(t, "balanced", map[string]fakeReply{
		": grant-name docs.example.com 443 0":     {out: "granted docs.example.com 443 until revoked\n"},
		": grant-name cdn.example.com 443,8443 0": {out: "granted\n"},
	})
	stdout, stderr, code := runDeps(t, d, "-C", dir, "policy", "add", "docs.example.com")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, stderr, code = runDeps(t, d, "-C", dir, "policy", "add", "*.cdn.example.com", "--ports", "8443,443")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := strings.Replace(policyYAML, `    - "api.example.com"   # the API
`, `    - "api.example.com"   # the API
    - "docs.example.com"
    - host: "*.cdn.example.com"
      ports: [443, 8443]
`, 1)
	if got := readYAML(t, dir); got != want {
		t.Errorf("agentbox.yaml:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(stdout, "update agentbox.yaml") || !strings.Contains(stdout, "applied docs.example.com ports 443 to the running sandbox (profile balanced): nothing restarted") {
		t.Errorf("stdout: %q", stdout)
	}
	upToDate(t, dir)
	if !slices.Equal(eg.calls, []string{": grant-name docs.example.com 443 0", ": grant-name cdn.example.com 443,8443 0"}) {
		t.Errorf("egress calls: %q", eg.calls)
	}
	recs := readLog(t, log)
	if len(recs) != 2 || recs[0]["event"] != "policy-add" || recs[0]["destination"] != "docs.example.com" || recs[0]["result"] != "ok" {
		t.Errorf("audit log: %v", recs)
	}
}

// readLog reads the audit log's records.
func readLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestPolicyRefusals: each is refused with nothing changed on disk.
func TestPolicyRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    string // replaces policyYAML when not empty
		args    []string
		code    int
		message string
	}{
		{"never", "", []string{"add", "x.secret.example.com"}, exitError, "refusing to add x.secret.example.com: x.secret.example.com overlaps secret.example.com, which elevation.never forbids (agentbox.yaml:9:11)"},
		{"never above", "", []string{"add", "example.com"}, exitError, "overlaps secret.example.com"},
		{"special range", "", []string{"add", "192.168.0.0/16"}, exitError, "192.168.0.0/16 overlaps 192.168.0.0/16 (private (RFC 1918)), which agentbox never grants (policy add adds none of these"},
		{"bad name", "", []string{"add", "exa mple.com"}, exitUsage, `invalid domain "exa mple.com"`},
		{"bad ports", "", []string{"add", "a.example.com", "--ports", "0"}, exitUsage, "invalid --ports"},
		{"host bits", "", []string{"add", "198.18.0.1/24"}, exitUsage, "did you mean 198.18.0.0/24?"},
		{"other ports", "", []string{"add", "api.example.com", "--ports", "22"}, exitError, "agentbox.yaml:6:7: network.domains: api.example.com is there already, with ports (the default); edit it there"},
		{"invalid file", "name: demo\nagent: none\nnetwork:\n  domain: [a.example.com]\n", []string{"add", "b.example.com"}, exitError, `agentbox.yaml:4:3: network: unknown key "domain"; did you mean "domains"?`},
		{"open", "", []string{"add", "b.example.com", "--profile", "open"}, exitError, "profile open admits every public destination already"},
		{"locked", "", []string{"add", "b.example.com", "--profile", "locked"}, exitError, "profile locked has no network"},
		{"no profile", "", []string{"add", "b.example.com", "--profile", "nope"}, exitUsage, `--profile: unknown profile "nope"`},
		{"not there", "", []string{"remove", "b.example.com"}, exitError, "b.example.com is not in network.domains"},
		{"wildcard is another entry", "", []string{"remove", "*.api.example.com"}, exitError, "*.api.example.com is not in network.domains"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, d, eg, _ := policyProject(t, "balanced", nil)
			if tc.yaml != "" {
				writeFile(t, filepath.Join(dir, "agentbox.yaml"), []byte(tc.yaml))
			}
			before := readYAML(t, dir)
			hash, _ := sandbox.FilesHash(dir)
			_, stderr, code := runDeps(t, d, append([]string{"-C", dir, "policy"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.message) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.message)
			}
			if readYAML(t, dir) != before {
				t.Errorf("agentbox.yaml changed")
			}
			if now, _ := sandbox.FilesHash(dir); now != hash {
				t.Errorf("the generated files changed")
			}
			if len(eg.calls) > 0 {
				t.Errorf("egress calls: %q", eg.calls)
			}
		})
	}
}

func TestPolicyNoApplyAndNoSandbox(t *testing.T) {
	dir, d, eg, _ := policyProject(t, "balanced", nil)
	_, stderr, code := runDeps(t, d, "-C", dir, "policy", "add", "docs.example.com", "--no-apply")
	if code != 0 || !strings.Contains(stderr, "not applied (--no-apply)") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(readYAML(t, dir), "docs.example.com") {
		t.Errorf("agentbox.yaml has no docs.example.com")
	}
	upToDate(t, dir)

	dir, d, _, _ = policyProject(t, "", nil)
	_, stderr, code = runDeps(t, d, "-C", dir, "policy", "add", "docs.example.com")
	if code != 0 || !strings.Contains(stderr, "not applied: no egress container runs; agentbox up starts the sandbox with it") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if len(eg.calls) > 0 {
		t.Errorf("egress calls: %q", eg.calls)
	}
}

// TestPolicyProfiles: the edit goes to the running profile's allowlist; a
// sandbox of another profile is left as it is.
func TestPolicyProfiles(t *testing.T) {
	dir, d, eg, _ := policyProject(t, "work", map[string]fakeReply{": grant-name more.example.com 443 0": {}})
	_, stderr, code := runDeps(t, d, "-C", dir, "policy", "add", "more.example.com")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := readYAML(t, dir); !strings.Contains(got, "domains: [work.example.com, more.example.com]") {
		t.Errorf("agentbox.yaml:\n%s", got)
	}
	if len(eg.calls) != 1 {
		t.Errorf("egress calls: %q", eg.calls)
	}

	dir, d, eg, _ = policyProject(t, "locked", nil)
	_, stderr, code = runDeps(t, d, "-C", dir, "policy", "add", "more.example.com", "--profile", "balanced")
	if code != 0 || !strings.Contains(stderr, "not applied: the running sandbox runs profile locked, whose allowlist this edit does not change") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if len(eg.calls) > 0 {
		t.Errorf("egress calls: %q", eg.calls)
	}
}

// TestPolicyRemove: what policy add applied live goes live; what the
// running egress image has takes agentbox up, which it says.
func TestPolicyRemove(t *testing.T) {
	dir, d, eg, _ := policyProject(t, "balanced", map[string]fakeReply{
		": grant-name docs.example.com 443 0": {},
		": revoke-name docs.example.com 443":  {},
		": grant 198.18.7.0/24 5432 0":        {},
		": revoke 198.18.7.0/24 5432":         {},
		": policies":                          {out: "198.18.7.0/24 5432\ndocs.example.com 443\n"},
	})
	writeUpRecord(t, dir, "demo")
	for _, args := range [][]string{
		{"add", "docs.example.com"}, {"add", "198.18.7.0/24", "--ports", "5432"},
		{"remove", "docs.example.com"}, {"remove", "198.18.7.0/24"},
	} {
		if _, stderr, code := runDeps(t, d, append([]string{"-C", dir, "policy"}, args...)...); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
	}
	// The list that add created is left empty by the removal of its last entry.
	if got, want := readYAML(t, dir), strings.Replace(policyYAML, "  ports: [443]\n", "  ports: [443]\n  cidrs: []\n", 1); got != want {
		t.Errorf("agentbox.yaml after add and remove:\n%s\nwant:\n%s", got, want)
	}
	if len(eg.calls) != 6 {
		t.Errorf("egress calls: %q", eg.calls)
	}

	var upped []string
	d.up = func(_ context.Context, _, profile string, _, _ io.Writer) error {
		upped = append(upped, profile)
		return nil
	}
	_, stderr, code := runDeps(t, d, "-C", dir, "policy", "remove", "api.example.com")
	if code != 0 || !slices.Equal(upped, []string{"balanced"}) {
		t.Fatalf("exit %d, up %q: %s", code, upped, stderr)
	}
	if !strings.Contains(stderr, "api.example.com: in the running egress image, which cannot drop it live; restarting the sandbox (agentbox up --profile balanced): the egress and agent containers are recreated and the agent's processes restart") {
		t.Errorf("stderr: %s", stderr)
	}
	if got := readYAML(t, dir); !strings.Contains(got, "  domains: []\n") {
		t.Errorf("agentbox.yaml:\n%s", got)
	}
}

// writeUpRecord records, as agentbox up does, that the sandbox of project
// started from the files in dir now.
func writeUpRecord(t *testing.T, dir, project string) {
	t.Helper()
	abs, _ := filepath.Abs(dir)
	sum, err := sandbox.FilesHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	path, err := sandbox.UpRecordPath(project)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(sandbox.UpRecord{Dir: abs, Egress: "e1", Files: sum})
	writeFile(t, path, data)
}

// TestPolicyKeepsFresh: a change applied live leaves the sandbox current
// for the stale warning; one not applied (--no-apply) does not.
func TestPolicyKeepsFresh(t *testing.T) {
	dir, d, _, _ := policyProject(t, "balanced", map[string]fakeReply{": grant-name docs.example.com 443 0": {}})
	writeUpRecord(t, dir, "demo")
	if _, stderr, code := runDeps(t, d, "-C", dir, "policy", "add", "docs.example.com"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rec, _ := sandbox.ReadUpRecord(dir, "demo")
	if sum, _ := sandbox.FilesHash(dir); rec == nil || rec.Files != sum {
		t.Errorf("up's record after a live add: %+v", rec)
	}
	if _, stderr, code := runDeps(t, d, "-C", dir, "policy", "add", "more.example.com", "--no-apply"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if sum, _ := sandbox.FilesHash(dir); sum == rec.Files {
		t.Fatal("the files did not change")
	}
	if again, _ := sandbox.ReadUpRecord(dir, "demo"); again.Files != rec.Files {
		t.Errorf("--no-apply changed up's record: %+v", again)
	}
}
