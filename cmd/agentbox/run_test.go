package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
	"github.com/agentbox-dev/agentbox/task"
	"go.yaml.in/yaml/v3"
)

// TestRunBadInput: a bad name, timeout or ref is a one-line error (exit 2
// for usage, 1 otherwise), before Docker is asked anything, and nothing is
// left behind.
func TestRunBadInput(t *testing.T) {
	dir := project(t, "agent-none")
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), append(readBytes(t, filepath.Join(dir, "agentbox.yaml")), "run: {timeout: 10m, max_timeout: 1h}\n"...))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"name", []string{"--name", "Fix_123"}, exitUsage, `invalid task name "Fix_123"`},
		{"reserved name", []string{"--name", "egress"}, exitUsage, `invalid task name "egress"`},
		{"unparsable timeout", []string{"--timeout", "10 minutes"}, exitUsage, `--timeout "10 minutes"`},
		{"timeout over the maximum", []string{"--timeout", "2h"}, exitUsage, "over run.max_timeout (1h0m0s in agentbox.yaml)"},
		{"missing ref", []string{"--ref", "no-such-branch"}, exitError, `--ref "no-such-branch": no such commit`},
		{"option as ref", []string{"--ref", "--output=/tmp/x"}, exitUsage, `invalid --ref`},
		{"workspace mode", []string{"--workspace", "here"}, exitUsage, `invalid --workspace "here"`},
		{"direct with a ref", []string{"--workspace", "direct", "--ref", "HEAD"}, exitUsage, "--workspace direct works on the working tree"},
		{"direct on another's files", []string{"--workspace", "direct"}, exitError, "--workspace direct"},
		{"where", []string{"--on", "moon"}, exitUsage, `invalid --on "moon"`},
		{"context without a cluster", []string{"--context", "prod"}, exitUsage, "--context and --namespace go with --on kubernetes"},
		{"direct on a cluster", []string{"--on", "kubernetes", "--workspace", "direct"}, exitUsage, "not on a cluster"},
		{"bad namespace", []string{"--on", "kubernetes", "--namespace", "Prod_1"}, exitUsage, `invalid --namespace "Prod_1"`},
		{"option as context", []string{"--on", "kubernetes", "--context", "--kubeconfig=/x"}, exitUsage, "invalid --context"},
		{"no kubernetes section", []string{"--on", "kubernetes"}, exitError, "agentbox.yaml has no kubernetes section"},
		{"unknown profile", []string{"--profile", "lockd"}, exitUsage, `--profile: unknown profile "lockd"; did you mean "locked"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"run", "-C", dir}, tc.args...), "--", "true")
			stdout, stderr, code := runIn(t, dir, args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) || stdout != "" {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.want)
			}
			if lines := strings.Count(strings.TrimSpace(strings.TrimSuffix(stderr, "Run 'agentbox --help' for usage.\n")), "\n"); lines > 0 {
				t.Errorf("the error is not one line: %q", stderr)
			}
			if left, _ := filepath.Glob(filepath.Join(state, "*")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestEgressRefusals reads the egress log's refused names (not the
// entrypoint's own probe) and its last reject counters.
func TestEgressRefusals(t *testing.T) {
	log := `dnsmasq[9]: query[A] evil.example from 172.18.0.2
dnsmasq[9]: config evil.example is NXDOMAIN
dnsmasq[9]: config agentbox-probe.invalid is NXDOMAIN
dnsmasq[9]: config EVIL.example is NXDOMAIN
dnsmasq[9]: config other.test is NXDOMAIN
dnsmasq[9]: config ` + "\x1b" + `[2J.example is NXDOMAIN
agentbox-egress: rejected packets: dns=1 other=0
agentbox-egress: rejected packets: dns=2 other=3 special=0
` + pktRecord("unlisted", "198.51.100.7", 6, 443) + "\n" + pktRecord("unlisted", "198.51.100.7", 6, 443) + "\n" +
		pktRecord("icmp", "2001:db8::1", 58, 0) + "\n"
	names, addrs, packets, err := task.EgressRefusals(strings.NewReader(log), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 3 || names[0] != (task.NameCount{Name: "evil.example", Count: 2}) || names[1] != (task.NameCount{Name: "\x1b[2j.example", Count: 1}) ||
		names[2] != (task.NameCount{Name: "other.test", Count: 1}) {
		t.Errorf("names %+v", names)
	}
	if len(packets) != 2 || packets["dns"] != 2 || packets["other"] != 3 {
		t.Errorf("packets %v", packets)
	}
	want := []task.AddrCount{
		{Address: "198.51.100.7", Port: 443, Protocol: "tcp", Count: 2, Why: "TCP to an unlisted address or port"},
		{Address: "2001:db8::1", Protocol: "icmpv6", Count: 1, Why: "ICMP"},
	}
	if !slices.Equal(addrs, want) {
		t.Errorf("addresses %+v, want %+v", addrs, want)
	}
	var b strings.Builder
	printSummary(&b, &task.Summary{Task: "fix-1", State: task.StateExited, RefusedNames: names, RefusedAddresses: addrs})
	if line := "  refused  198.51.100.7:443/tcp (2), 2001:db8::1/icmpv6 (1)\n"; !strings.Contains(b.String(), line) {
		t.Errorf("the summary lacks %q:\n%s", line, b.String())
	}
}

// TestTaskOverride: a task changes only its project's command, git
// database, pid namespace, labels and deadline; its images are the
// sandbox's.
func TestTaskOverride(t *testing.T) {
	cfg := &config.Config{Name: "acme", UID: 1000, DefaultProfile: "balanced",
		Profiles: []config.Profile{{Name: "balanced"}, {Name: "locked", Locked: true}}}
	out, err := generator.TaskOverride(cfg, generator.Task{Name: "fix-1", Origin: "/state/fix-1/origin.git",
		Command: []string{"bash", "-c", "echo 'quoted' $HOME"}, Env: []string{"API_KEY"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "workspace-init") {
		t.Errorf("a balanced task has a workspace-init service:\n%s", out)
	}
	for _, want := range []string{"image: acme-agent", "image: acme-egress", "pid: service:egress",
		"AGENTBOX_AGENT_UID: \"1000\"", "dev.agentbox.task: fix-1", "source: /state/fix-1/origin.git",
		"target: /run/agentbox/origin", "read_only: true", "API_KEY: null", `- echo 'quoted' $$HOME`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the override lacks %q:\n%s", want, out)
		}
	}
	if _, err := generator.TaskOverride(cfg, generator.Task{Name: "../x", Command: []string{"true"}}); err == nil {
		t.Error("a bad task name was accepted")
	}
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTaskOverrideLocked: under a locked profile the task's git database
// goes to workspace-init, which makes the clone; the agent has none.
func TestTaskOverrideLocked(t *testing.T) {
	cfg := &config.Config{Name: "acme", UID: 1000, DefaultProfile: "balanced",
		Profiles: []config.Profile{{Name: "balanced"}, {Name: "locked", Locked: true}}}
	task := generator.Task{Name: "fix-1", Origin: "/state/fix-1/origin.git", Command: []string{"make", "test"}, Profile: "locked"}
	out, err := generator.TaskOverride(cfg, task)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image   string           `yaml:"image"`
			Volumes []map[string]any `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	wi, agent := doc.Services["workspace-init"], doc.Services["agent"]
	if wi.Image != "acme-agent" || len(wi.Volumes) != 1 || wi.Volumes[0]["source"] != task.Origin || len(agent.Volumes) != 0 {
		t.Errorf("override:\n%s", out)
	}
	task.Profile = "nope"
	if _, err := generator.TaskOverride(cfg, task); err == nil || !strings.Contains(err.Error(), `unknown profile "nope"`) {
		t.Errorf("unknown profile: %v", err)
	}
}

// TestReportRefusedBranch: a task whose command succeeded but whose branch
// fetch's checks refused does not exit 0; a failed command keeps its own
// code.
func TestReportRefusedBranch(t *testing.T) {
	for _, tc := range []struct {
		exit, want int
		status     string
	}{
		{0, task.ExitBranchRefused, "refused"},
		{7, 7, "refused"},
		{task.ExitTimedOut, task.ExitTimedOut, "refused"},
		{0, 0, "new"},
	} {
		sum := &task.Summary{Task: "fix-1", State: task.StateExited, ExitCode: tc.exit, BranchStatus: tc.status}
		var out, errs strings.Builder
		code := 0
		if err := reportTask(sum, false, &out, &errs); err != nil {
			var ee *exitErr
			if !errors.As(err, &ee) {
				t.Fatalf("reportTask: %v", err)
			}
			code = ee.code
		}
		if code != tc.want {
			t.Errorf("command exit %d, branch %s: run exits %d, want %d", tc.exit, tc.status, code, tc.want)
		}
	}
	// The reasons read as fetch prints them, not as Go values; in JSON each
	// is {commit, path, why}.
	sum := &task.Summary{Task: "fix-1", State: task.StateExited, Branch: "refs/heads/agentbox/fix-1", BranchStatus: "refused",
		Refusals: []gitgate.Reason{{Commit: "0123456789abcdef0123456789abcdef01234567", Path: "sub/.git/hooks/pre-commit\x1b[2J", Why: "a git directory in the tree"}}}
	var out, errs strings.Builder
	_ = reportTask(sum, false, &out, &errs)
	if line := "           refused: 0123456789ab sub/.git/hooks/pre-commit\\x1b[2J: a git directory in the tree\n"; !strings.Contains(errs.String(), line) {
		t.Errorf("the summary lacks %q:\n%s", line, errs.String())
	}
	out.Reset()
	_ = reportTask(sum, true, &out, &errs)
	var got struct {
		Refusals []map[string]string `json:"branch_refusals"`
	}
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil || len(got.Refusals) != 1 ||
		got.Refusals[0]["commit"] != sum.Refusals[0].Commit || got.Refusals[0]["path"] != sum.Refusals[0].Path || got.Refusals[0]["why"] != sum.Refusals[0].Why {
		t.Errorf("branch_refusals: %v (%v)\n%s", got.Refusals, err, out.String())
	}
}

// TestTaskBranchStatusEmpty: the summary of a task branch with no commit
// beyond the task's base says so (task.BranchEmpty).
func TestTaskBranchStatusEmpty(t *testing.T) {
	var b strings.Builder
	printSummary(&b, &task.Summary{Task: "fix-1", State: task.StateExited, Branch: "refs/heads/agentbox/fix-1", BranchStatus: task.BranchEmpty})
	if !strings.Contains(b.String(), "branch   refs/heads/agentbox/fix-1: empty: no new commit\n") {
		t.Errorf("the summary:\n%s", b.String())
	}
}

// TestTaskOverrideCopiesLogin: with LoginFrom, a task's override has a
// login-copy service that copies the agent's credentials files only, from
// the sandbox's state volume mounted read-only, as the agent's user, with no
// network; the agent starts after it. Without LoginFrom there is none.
func TestTaskOverrideCopiesLogin(t *testing.T) {
	claude, _ := catalog.LookupAgent("claude")
	cfg := &config.Config{Name: "acme", UID: 1000, GID: 1000, Agent: claude, DefaultProfile: "balanced",
		Profiles: []config.Profile{{Name: "balanced"}, {Name: "locked", Locked: true}, {Name: "wide"}}}
	task := generator.Task{Name: "fix-1", Origin: "/state/fix-1/origin.git", Command: []string{"true"},
		Profile: "wide", LoginFrom: "acme_wide.agent-state"}
	out, err := generator.TaskOverride(cfg, task)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Entrypoint  []string         `yaml:"entrypoint"`
			NetworkMode string           `yaml:"network_mode"`
			User        string           `yaml:"user"`
			Volumes     []map[string]any `yaml:"volumes"`
			DependsOn   map[string]any   `yaml:"depends_on"`
		} `yaml:"services"`
		Volumes map[string]map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	lc, ok := doc.Services["login-copy"]
	if !ok {
		t.Fatalf("no login-copy service:\n%s", out)
	}
	if lc.NetworkMode != "none" || lc.User != "1000:1000" {
		t.Errorf("login-copy runs with network %q as %q", lc.NetworkMode, lc.User)
	}
	if args := lc.Entrypoint[len(lc.Entrypoint)-2:]; args[0] != claude.StateDir || args[1] != ".credentials.json" {
		t.Errorf("login-copy copies %q", args)
	}
	want := []map[string]any{
		{"type": "volume", "source": "sandbox-login", "target": "/run/agentbox/login", "read_only": true},
		{"type": "volume", "source": "wide.agent-state", "target": claude.StateDir},
	}
	if fmt.Sprint(lc.Volumes) != fmt.Sprint(want) {
		t.Errorf("login-copy's volumes %v, want %v", lc.Volumes, want)
	}
	if v := doc.Volumes["sandbox-login"]; v["external"] != true || v["name"] != "acme_wide.agent-state" {
		t.Errorf("the sandbox's volume: %v", v)
	}
	if _, ok := doc.Services["agent"].DependsOn["login-copy"]; !ok {
		t.Errorf("the agent does not wait for login-copy:\n%s", out)
	}
	task.LoginFrom = ""
	if out, _ := generator.TaskOverride(cfg, task); strings.Contains(string(out), "login") {
		t.Errorf("without LoginFrom:\n%s", out)
	}
	task.LoginFrom, task.Profile = "acme_agent-state", "locked"
	if _, err := generator.TaskOverride(cfg, task); err == nil {
		t.Error("a locked task copies a login")
	}
}
