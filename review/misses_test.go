package review

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestDiffMisses: each change of issue 23 that diff once missed or
// mislabelled, and changes that must raise no alarm. A case names the
// kind and the key of the row it needs (no row at all: kind ""); a case
// whose kind is not widens must have no widens row.
func TestDiffMisses(t *testing.T) {
	for _, tc := range []struct {
		name, base, head string
		kind, key        string
	}{
		// env: variables that run code, move traffic or override the catalog.
		{"env LD_PRELOAD", "", "env: {LD_PRELOAD: /workspace/x.so}\n", Widens, "env.LD_PRELOAD"},
		{"env NODE_OPTIONS", "", "env: {NODE_OPTIONS: --require /workspace/x.js}\n", Widens, "env.NODE_OPTIONS"},
		{"env HTTPS_PROXY", "", "env: {HTTPS_PROXY: http://proxy.example:3128}\n", Widens, "env.HTTPS_PROXY"},
		{"env GIT_SSH_COMMAND", "", "env: {GIT_SSH_COMMAND: sh /workspace/x}\n", Widens, "env.GIT_SSH_COMMAND"},
		{"env BASH_ENV", "", "env: {BASH_ENV: /workspace/.rc}\n", Widens, "env.BASH_ENV"},
		{"env value of LD_PRELOAD changed", "env: {LD_PRELOAD: /usr/lib/a.so}\n", "env: {LD_PRELOAD: /workspace/b.so}\n", Widens, "env.LD_PRELOAD"},
		{"env LD_PRELOAD removed", "env: {LD_PRELOAD: /usr/lib/a.so}\n", "", Narrows, "env.LD_PRELOAD"},
		{"env overrides the catalog", "", "env: {DISABLE_AUTOUPDATER: \"0\"}\n", Widens, "env.DISABLE_AUTOUPDATER"},
		{"env plain variable", "", "env: {ACME_COLOR: blue}\n", Changes, "env.ACME_COLOR"},
		// secrets and time.
		{"run.env gains a name", "", "run: {env: [GH_TOKEN]}\n", Widens, "run.env[0]"},
		{"run.timeout raised", "run: {timeout: 30m}\n", "run: {timeout: 2h}\n", Widens, "run.timeout"},
		{"run.timeout lowered", "run: {timeout: 2h}\n", "run: {timeout: 30m}\n", Narrows, "run.timeout"},
		{"run.timeout default to longer", "", "run: {timeout: 1h}\n", Widens, "run.timeout"},
		{"run.max_timeout raised", "", "run: {max_timeout: 24h}\n", Widens, "run.max_timeout"},
		{"elevation.max_duration raised", "", "elevation: {max_duration: 8h}\n", Widens, "elevation.max_duration"},
		{"elevation.never entry removed", "elevation: {never: [203.0.113.0/24, evil.example]}\n", "elevation: {never: [evil.example]}\n", Widens, "elevation.never[0]"},
		{"elevation.never name removed", "elevation: {never: [203.0.113.0/24, evil.example]}\n", "elevation: {never: [203.0.113.0/24]}\n", Widens, "elevation.never[1]"},
		{"elevation.never entry added", "", "elevation: {never: [evil.example]}\n", Narrows, "elevation.never[0]"},
		// custom profiles' limits.
		{"profile memory raised", "profiles: {ci: {from: balanced, resources: {memory: 1g}}}\n", "profiles: {ci: {from: balanced, resources: {memory: 8g}}}\n", Widens, "profiles.ci.resources.memory"},
		{"profile pids lowered", "profiles: {ci: {from: balanced, resources: {pids: 512}}}\n", "profiles: {ci: {from: balanced, resources: {pids: 64}}}\n", Narrows, "profiles.ci.resources.pids"},
		{"profile cpus removed", "profiles: {ci: {from: balanced, resources: {cpus: 1}}}\n", "profiles: {ci: {from: balanced}}\n", Widens, "profiles.ci.resources.cpus"},
		{"profile elevation duration raised", "profiles: {ci: {from: balanced}}\n", "profiles: {ci: {from: balanced, elevation: {max_duration: 8h}}}\n", Widens, "profiles.ci.elevation.max_duration"},
		// hidden: the last matching pattern decides.
		{"hidden reorder un-hides", "workspace: {hidden: [\"!.env.example\", \".env.*\"]}\n", "workspace: {hidden: [\".env.*\", \"!.env.example\"]}\n", Widens, "workspace.hidden[1]"},
		{"hidden reorder hides", "workspace: {hidden: [\".env.*\", \"!.env.example\"]}\n", "workspace: {hidden: [\"!.env.example\", \".env.*\"]}\n", Narrows, "workspace.hidden[1]"},
		{"profile un-hides .env", "profiles: {ci: {from: balanced}}\n", "profiles: {ci: {from: balanced, workspace: {hidden: [\"!.env\"]}}}\n", Widens, "profiles.ci.workspace.hidden[0]"},
		{"hidden exception for a file not hidden", "", "workspace: {hidden: [.env, \".env.*\", \"!.env.example\", \"!.env.sample\", \"!.env.template\", \"!docs/x.md\"]}\n", "", ""},
		{"hidden pattern already covered", "", "workspace: {hidden: [.env, \".env.*\", .env.local, \"!.env.example\", \"!.env.sample\", \"!.env.template\"]}\n", "", ""},
		{"hidden reordered without effect", "workspace: {hidden: [.env, secrets]}\n", "workspace: {hidden: [secrets, .env]}\n", "", ""},
		// the default profile: compared in full, not by its built-in's words.
		{"default to a wider custom profile", "profiles: {dev: {from: locked, network: {domains: [evil.example]}}}\n",
			"profile: dev\nprofiles: {dev: {from: locked, network: {domains: [evil.example]}}}\n", Widens, "profile"},
		{"default to larger limits", "profiles: {big: {from: balanced, resources: {memory: 64g}}}\n",
			"profile: big\nprofiles: {big: {from: balanced, resources: {memory: 64g}}}\n", Widens, "profile"},
		{"default to a profile that un-hides .env", "profiles: {ci: {from: balanced, workspace: {hidden: [\"!.env\"]}}}\n",
			"profile: ci\nprofiles: {ci: {from: balanced, workspace: {hidden: [\"!.env\"]}}}\n", Widens, "profile"},
		// other sections.
		{"extension added", "", "devcontainer: {extensions: [acme.tool]}\n", Widens, "devcontainer.extensions[0]"},
		{"memory written otherwise", "resources: {memory: 4g}\n", "resources: {memory: 4096m}\n", "", ""},
		{"domains reordered", "network: {domains: [a.example, b.example]}\n", "network: {domains: [b.example, a.example]}\n", "", ""},
		{"writable reordered", "workspace: {writable: [.vscode, .claude]}\n", "workspace: {writable: [.claude, .vscode]}\n", "", ""},
		{"verify target", "", "verify: {unlisted_name: nowhere.example}\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := diffYAML(t, "agent: claude\n"+tc.base, "agent: claude\n"+tc.head)
			if tc.kind == "" && len(rows) > 0 {
				t.Errorf("want no row, got:\n%s", rowLines(rows))
			}
			if tc.kind != "" && !hasRow(rows, tc.kind, tc.key) {
				t.Errorf("no %s row citing %s:\n%s", tc.kind, tc.key, rowLines(rows))
			}
			if tc.kind != Widens && hasRow(rows, Widens, "") {
				t.Errorf("a widens row where nothing widens:\n%s", rowLines(rows))
			}
		})
	}
}

// TestExplainWritableCitesFilePosition: workspace.writable[i] is the
// file's i, not a sorted position.
func TestExplainWritableCitesFilePosition(t *testing.T) {
	s, err := explainSource("agent: claude\nworkspace:\n  writable: [.vscode, .claude]\n", testLock)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range s.Filesystem.Writable {
		want := map[string]string{".vscode": "workspace.writable[0]", ".claude": "workspace.writable[1]"}[w.Path]
		if w.Key != want || w.Line != 3 {
			t.Errorf("%s cited as %s at line %d, want %s at 3", w.Path, w.Key, w.Line, want)
		}
	}
}

func diffYAML(t *testing.T, base, head string) []DiffRow {
	t.Helper()
	b, err := explainSource(base, testLock)
	if err != nil {
		t.Fatalf("base: %v", err)
	}
	h, err := explainSource(head, testLock)
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	return DiffSandboxes(b, h)
}

func hasRow(rows []DiffRow, kind, key string) bool {
	for _, r := range rows {
		if r.Kind == kind && (key == "" || r.Key == key) {
			return true
		}
	}
	return false
}

func rowLines(rows []DiffRow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %s %s %q %q -> %q %s:%d\n", r.Kind, r.What, r.Subject, r.From, r.To, r.Key, r.Line)
	}
	return b.String()
}

// TestExplainHiddenOrder: explain states each hidden pattern's effect in
// the real order (the last match decides): a leading exception that a
// later pattern overrides has no effect, and a profile's "!.env" takes
// .env back out rather than hiding it.
func TestExplainHiddenOrder(t *testing.T) {
	s, err := explainSource("agent: claude\nworkspace: {hidden: [\"!.env.example\", \".env.*\", secrets]}\n"+
		"profiles: {ci: {from: balanced, workspace: {hidden: [\"!.env.*\", \"!notes.txt\"]}}}\n", testLock)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"no effect: .env.* below hides them again", "hides", "hides"}
	for i, r := range s.Filesystem.Hidden {
		if r.Effect != want[i] {
			t.Errorf("%s: %q, want %q", r.Path, r.Effect, want[i])
		}
	}
	for _, p := range s.Profiles {
		if p.Name != "ci" {
			continue
		}
		want := []string{"takes back out of .env.* above", "no effect: no pattern above hides them"}
		for i, r := range p.HiddenRules {
			if r.Effect != want[i] || r.Key != fmt.Sprintf("profiles.ci.workspace.hidden[%d]", i) {
				t.Errorf("ci %s: %q at %s, want %q", r.Path, r.Effect, r.Key, want[i])
			}
		}
	}
}

// TestEnvGain: names by prefix, and a name agentbox knows nothing of.
func TestEnvGain(t *testing.T) {
	for name, want := range map[string]string{"LD_BIND_NOW": GainCode, "GIT_CONFIG_KEY_0": GainCode, "GIT_CONFIG_GLOBAL": GainCode,
		"HTTPS_PROXY": GainSecrets, "NODE_EXTRA_CA_CERTS": GainTrust, "ACME_ENV": "", "LDFLAGS": ""} {
		if got, words := EnvGain(name); got != want || (want != "" && words == "") {
			t.Errorf("%s: %q %q, want %q", name, got, words, want)
		}
	}
}

// TestExplainDefaultForge: where the default profile allows github.com and
// git.forges does not list it, explain shows its default front door (no
// token, no push), as the gateway has it; listed, the entry; not allowed,
// nothing.
func TestExplainDefaultForge(t *testing.T) {
	for _, tc := range []struct {
		name, yml string
		want      []ForgeView
	}{
		{"allowed", "agent: claude\nnetwork:\n  services: [github]\n",
			[]ForgeView{{Host: "github.com", Repos: []string{}, Push: []ForgePush{}, Default: true, Origin: Origin{Key: "git.forges"}}}},
		{"listed", "agent: claude\nnetwork:\n  services: [github]\ngit:\n  forges:\n    - host: github.com\n",
			[]ForgeView{{Host: "github.com", Repos: []string{}, Push: []ForgePush{}, Origin: Origin{Key: "git.forges[0]", Line: 6}}}},
		{"not allowed", "agent: claude\n", []ForgeView{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := explainSource(tc.yml, testLock)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Git.Forges, tc.want) {
				t.Errorf("forges:\n got %+v\nwant %+v", s.Git.Forges, tc.want)
			}
		})
	}
}
