package review

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// integrity is a well-formed sha512 integrity made of one repeated letter.
func integrity(c byte) string { return "sha512-" + strings.Repeat(string(c), 85) + "A==" }

// treeLock is testLock with the claude tree replaced by entries, one
// "path: {version: ..., integrity: ...}" each; the CLI's own is added.
func treeLock(cli string, entries ...string) string {
	head, _, _ := strings.Cut(testLock, "\nnpm:\n")
	var b strings.Builder
	b.WriteString(head + "\nnpm:\n  \"@anthropic-ai/claude-code\":\n    version: \"2.0.14\"\n    packages:\n")
	fmt.Fprintf(&b, "      \"node_modules/@anthropic-ai/claude-code\": {version: \"2.0.14\", integrity: %q, bin: {\"claude\": \"cli.js\"}}\n", cli)
	for _, e := range entries {
		path, rest, _ := strings.Cut(e, " ")
		v, in, _ := strings.Cut(rest, " ")
		in, script := strings.CutSuffix(in, " script")
		fmt.Fprintf(&b, "      %q: {version: %q, integrity: %q, install_script: %v}\n", path, v, in, script)
	}
	return b.String()
}

// rowKinds maps "what subject" to the kind of each row, and checks that
// every risk says why.
func rowKinds(t *testing.T, rows []DiffRow) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, r := range rows {
		got[r.What+" "+r.Subject] = r.Kind
		if r.Kind == Risk && r.Warning == "" {
			t.Errorf("risk without a warning: %+v", r)
		}
	}
	return got
}

func wantKinds(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all rows: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}

// TestDiffNPMTree: each package of the agent CLI's tree that is added,
// removed, moved, downgraded, or whose tarball changed under its version is
// a row of its own; all but a removal are risks, an upgrade is a pin.
func TestDiffNPMTree(t *testing.T) {
	a, b := integrity('A'), integrity('B')
	x := "node_modules/x 1.0.0 " + a
	tree := "tree agent CLI tree"
	for _, tc := range []struct {
		name       string
		base, head string
		want       map[string]string
	}{
		{"tarball changed", treeLock(a, x), treeLock(a, "node_modules/x 1.0.0 "+b),
			map[string]string{"npm package x": Risk, tree: Pinned}},
		{"the CLI's own tarball changed", treeLock(a, x), treeLock(b, x),
			map[string]string{"npm package @anthropic-ai/claude-code": Risk, tree: Pinned}},
		{"added", treeLock(a, x), treeLock(a, x, "node_modules/y 2.0.0 "+b),
			map[string]string{"npm package y": Risk, tree: Pinned}},
		{"removed", treeLock(a, x, "node_modules/y 2.0.0 "+b), treeLock(a, x),
			map[string]string{"npm package y": Pinned, tree: Pinned}},
		{"downgraded", treeLock(a, x), treeLock(a, "node_modules/x 0.9.0 "+b),
			map[string]string{"npm package x": Risk, tree: Pinned}},
		{"upgraded", treeLock(a, x), treeLock(a, "node_modules/x 1.0.1 "+b),
			map[string]string{"npm package x": Pinned, tree: Pinned}},
		{"moved", treeLock(a, "node_modules/y 2.0.0 "+b, "node_modules/y/node_modules/x 1.0.0 "+a),
			treeLock(a, "node_modules/y 2.0.0 "+b, x),
			map[string]string{"npm package x": Risk, tree: Pinned}},
		{"an install script now", treeLock(a, x), treeLock(a, "node_modules/x 1.0.1 "+b+" script"),
			map[string]string{"npm package x": Risk, tree: Pinned}},
		{"no change", treeLock(a, x), treeLock(a, x), map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := explainSource("agent: claude\n", tc.base)
			if err != nil {
				t.Fatal(err)
			}
			head, err := explainSource("agent: claude\n", tc.head)
			if err != nil {
				t.Fatal(err)
			}
			rows := DiffSandboxes(base, head)
			wantKinds(t, rowKinds(t, rows), tc.want)
			// Each package's row cites its entry in agentbox.lock: the
			// line a pull request shows (the base's, for one removed).
			for _, r := range rows {
				if r.What != "npm package" {
					continue
				}
				lock, s := tc.head, head
				if r.To == "" {
					lock, s = tc.base, base
				}
				key := yamlpos.Join(treeLockKey("@anthropic-ai/claude-code"), "node_modules/"+r.Subject)
				if r.File != "agentbox.lock" || r.Key != key || r.Line != s.lockLines[key] ||
					!strings.Contains(strings.Split(lock, "\n")[r.Line-1], `"node_modules/`+r.Subject+`"`) {
					t.Errorf("%+v: want the package's line in agentbox.lock", r)
				}
			}
			if slices.ContainsFunc(rows, func(r DiffRow) bool { return r.Kind == Risk }) && rows[0].Kind != Risk {
				t.Errorf("risks sort first: %+v", rows)
			}
		})
	}
}

// TestDiffSupplyRisks: a Debian package downgraded (on one architecture
// too), the snapshot moved back in time, an image moved to another
// repository and the agent CLI downgraded are risks; the same moves forward
// are pins.
func TestDiffSupplyRisks(t *testing.T) {
	base, err := explainSource("agent: claude\n", testLock)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(kind, name, digest string) *Sandbox {
		head := *base
		head.Pins = append([]Pin(nil), base.Pins...)
		for i, p := range head.Pins {
			if p.Kind == kind && p.Name == name {
				switch kind {
				case "image":
					head.Pins[i].Name, head.Pins[i].Digest, _ = strings.Cut(digest, "@")
				default:
					head.Pins[i].Digest = digest
				}
				return &head
			}
		}
		t.Fatalf("no pin %s %s in %+v", kind, name, base.Pins)
		return nil
	}
	for _, tc := range []struct {
		name string
		head *Sandbox
		key  string
		want string
	}{
		{"debian downgrade", edit("debian", "git", "1:2.39.5-0+deb12u1"), "debian bookworm git", Risk},
		{"debian downgrade on arm64 only", edit("debian", "git", "1:2.39.5-0+deb12u2 (arm64: 1:2.39.5-0+deb12u1)"), "debian bookworm git", Risk},
		{"debian upgrade", edit("debian", "git", "1:2.39.5-0+deb12u3"), "debian bookworm git", Pinned},
		{"snapshot back", edit("snapshot", "debian", "20261001T000000Z"), "snapshot Debian snapshot", Risk},
		{"security snapshot back", edit("snapshot", "debian-security", "20261001T000000Z"), "snapshot Debian security snapshot", Risk},
		{"snapshot forward", edit("snapshot", "debian", "20261201T000000Z"), "snapshot Debian snapshot", Pinned},
		{"egress image to another repository", edit("image", "debian", "evil.example/debian@sha256:"+strings.Repeat("9", 64)), "image egress image", Risk},
		{"egress image digest", edit("image", "debian", "debian@sha256:"+strings.Repeat("9", 64)), "image egress image", Pinned},
		{"agent CLI downgrade", edit("package", "@anthropic-ai/claude-code", "2.0.13"), "package agent CLI", Risk},
		{"agent CLI upgrade", edit("package", "@anthropic-ai/claude-code", "2.0.15"), "package agent CLI", Pinned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantKinds(t, rowKinds(t, DiffSandboxes(base, tc.head)), map[string]string{tc.key: tc.want})
		})
	}
}
