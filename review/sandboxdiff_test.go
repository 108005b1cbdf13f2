package review

import (
	"os"
	"path/filepath"
	"strings"
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
	b, err := os.ReadFile(filepath.Join("../testdata/golden", "agent-claude", "agentbox.lock"))
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// TestDiffProfiles: a profile added or removed, a custom profile that
// moves from locked to open (widens) and back (narrows), a profile that
// admits another destination, and the default profile.
func TestDiffProfiles(t *testing.T) {
	sandbox := func(yaml string) *Sandbox {
		t.Helper()
		s, err := explainSource("agent: none\n"+yaml, testLock)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name, base, head string
		want             map[string]string
	}{
		{"added", "", "profiles: {ci: {from: balanced, resources: {memory: 64g}}}\n",
			map[string]string{"profile ci": Widens}},
		{"added, no wider than locked", "", "profiles: {ci: {from: locked}}\n",
			map[string]string{"profile ci": Changes}},
		{"added, un-hiding .env", "", "profiles: {ci: {from: balanced, workspace: {hidden: [\"!.env\"]}}}\n",
			map[string]string{"profile ci": Widens}},
		{"removed", "profiles: {ci: {from: locked}}\n", "",
			map[string]string{"profile ci": Narrows}},
		{"locked to open", "profiles: {ci: {from: locked}}\n", "profiles: {ci: {from: open}}\n",
			map[string]string{"profile ci": Widens}},
		{"open to locked", "profiles: {ci: {from: open}}\n", "profiles: {ci: {from: locked}}\n",
			map[string]string{"profile ci": Narrows}},
		{"from locked to open with its own network", "profiles: {ci: {from: locked, network: {cidrs: [10.1.0.0/16]}}}\n", "profiles: {ci: {from: open, network: {cidrs: [10.1.0.0/16]}}}\n",
			map[string]string{"profile ci": Widens, "profile destination ci every public address, every TCP port; every name resolves": Widens}},
		{"elevation refused", "", "elevation: {allowed: false}\n",
			map[string]string{"profile balanced": Narrows, "profile open": Narrows}},
		{"another destination", "profiles: {api: {from: locked, network: {domains: [a.example]}}}\n",
			"profiles: {api: {from: locked, network: {domains: [a.example, b.example]}}}\n",
			map[string]string{"profile destination api b.example:443": Widens}},
		{"default wider", "", "profile: open\n", map[string]string{"default profile agentbox up": Widens}},
		{"default narrower", "", "profile: locked\n", map[string]string{"default profile agentbox up": Narrows}},
		{"default named like a mode", "profiles: {none: {from: locked}}\n", "profile: none\nprofiles: {none: {from: locked}}\n", map[string]string{"default profile agentbox up": Narrows}},
		{"default as wide", "profiles: {b2: {from: balanced}}\n", "profile: b2\nprofiles: {b2: {from: balanced}}\n", map[string]string{"default profile agentbox up": Changes}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, r := range DiffSandboxes(sandbox(tc.base), sandbox(tc.head)) {
				got[r.What+" "+r.Subject] = r.Kind
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q (all rows: %v)", k, got[k], v, got)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDiffProfileReadOnlyCitesEntry: a path a profile's workspace.readonly
// gains or loses is cited at its own entry, as git numbers the line, not
// at the profile's key.
func TestDiffProfileReadOnlyCitesEntry(t *testing.T) {
	base := "agent: none\nprofiles:\n  ci:\n    from: balanced\n    workspace:\n      readonly:\n        - deploy\n"
	head := base + "        - secrets\n"
	b, err := explainSource(base, testLock)
	if err != nil {
		t.Fatal(err)
	}
	h, err := explainSource(head, testLock)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rows []DiffRow
		side string
	}{{DiffSandboxes(b, h), "working"}, {DiffSandboxes(h, b), "base"}} {
		if len(c.rows) != 1 || c.rows[0].What != "readonly" || c.rows[0].Key != "profiles.ci.workspace.readonly[1]" ||
			c.rows[0].Line != 8 || c.rows[0].Side != c.side {
			t.Errorf("rows %+v, want the readonly entry profiles.ci.workspace.readonly[1] at line 8 of the %s side", c.rows, c.side)
		}
	}
}

// TestDiffProfileDestinationCitesEntry: a destination a profile's own
// network gains is cited at its entry (a domain, a CIDR, a service), as
// git numbers the line, not at the profile's key.
func TestDiffProfileDestinationCitesEntry(t *testing.T) {
	base := "agent: none\nprofiles:\n  api:\n    from: locked\n    network:\n      domains: [a.example]\n"
	for _, tc := range []struct {
		name, head, key string
		line            int
	}{
		{"domain", base + "      services: [github]\n", "profiles.api.network.services[0]", 7},
		{"cidr", base + "      cidrs: [198.18.0.0/16]\n", "profiles.api.network.cidrs[0]", 7},
		{"another domain", strings.Replace(base, "[a.example]", "\n        - a.example\n        - b.example", 1), "profiles.api.network.domains[1]", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := explainSource(base, testLock)
			if err != nil {
				t.Fatal(err)
			}
			h, err := explainSource(tc.head, testLock)
			if err != nil {
				t.Fatal(err)
			}
			rows := DiffSandboxes(b, h)
			if len(rows) == 0 {
				t.Fatal("no rows")
			}
			for _, r := range rows {
				if r.What == "profile destination" && (r.Key != tc.key || r.Line != tc.line) {
					t.Errorf("%s: cites %s:%d, want %s:%d", r.Subject, r.Key, r.Line, tc.key, tc.line)
				}
			}
		})
	}
}
