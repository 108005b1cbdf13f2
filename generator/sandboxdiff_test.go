package generator

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDiffSandboxesPrivileges covers the rows no agentbox.yaml can cause
// today (agentbox never grants a capability or turns no_new_privs off, and
// its mounts do not depend on the file): they must still be classified.
func TestDiffSandboxesPrivileges(t *testing.T) {
	base, err := explainSource("agent: none\n", testLock)
	if err != nil {
		t.Fatal(err)
	}
	head := *base
	head.Privileges.Capabilities = []string{"NET_RAW"}
	head.Privileges.NoNewPrivs = false
	head.Filesystem.Mounts = append([]MountView(nil), base.Filesystem.Mounts...)
	head.Filesystem.Mounts[1].Mode = "rw"
	got := map[string]string{}
	for _, r := range DiffSandboxes(base, &head) {
		got[r.What+" "+r.Subject] = r.Kind
	}
	want := map[string]string{
		"capability NET_RAW": Widens,
		"no_new_privs agent": Widens,
		"mount bind .git":    Widens,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all rows: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if rows := DiffSandboxes(&head, base); len(rows) != 3 || rows[0].Kind != Narrows {
		t.Errorf("the reverse: %+v", rows)
	}
	if rows := DiffSandboxes(base, base); len(rows) != 0 {
		t.Errorf("no change: %+v", rows)
	}
}

// TestExplainMatchesPlan: explain reads the plan that render renders.
func TestExplainMatchesPlan(t *testing.T) {
	s, err := explainSource("agent: claude\nnetwork:\n  domains: [{host: x.example.com, ports: [8443]}]\nresources: {memory: 512m, pids: 64}\n", testLock)
	if err != nil {
		t.Fatal(err)
	}
	if s.Privileges.Memory != "512m" || s.Privileges.MemoryBytes != 512<<20 || s.Privileges.Pids != 64 {
		t.Errorf("limits: %+v", s.Privileges)
	}
	var found bool
	for _, d := range s.Network.Domains {
		if d.Name == "x.example.com" {
			found = d.Key == "network.domains[0]" && d.Line == 3 && len(d.Ports) == 1 && d.Ports[0] == 8443
		}
	}
	if !found {
		t.Errorf("x.example.com not explained with its key, line and port: %+v", s.Network.Domains)
	}
}

// testLock pins what the golden case agent-claude needs, and so any
// configuration with claude or no agent and no extra packages.
var testLock = func() string {
	b, err := os.ReadFile(filepath.Join(goldenDir, "agent-claude", "agentbox.lock"))
	if err != nil {
		panic(err)
	}
	return string(b)
}()
