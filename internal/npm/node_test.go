package npm

import (
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// nodeScript reads {ranges, versions} and prints, per range, null if
// node-semver rejects it, else one 0/1 per version for Range.test.
const nodeScript = `
const semver = require(process.argv[1])
const d = JSON.parse(require('fs').readFileSync(0, 'utf8'))
process.stdout.write(JSON.stringify(d.ranges.map(r => {
  let R
  try { R = new semver.Range(r) } catch (e) { return null }
  return d.versions.map(v => R.test(v) ? 1 : 0)
})))`

// TestAgainstNodeSemver compares ParseRange and Satisfies with node-semver
// itself on generated ranges. It runs only when AGENTBOX_NODE_SEMVER names a
// semver package directory, such as npm's node_modules/semver.
func TestAgainstNodeSemver(t *testing.T) {
	dir := os.Getenv("AGENTBOX_NODE_SEMVER")
	if dir == "" {
		t.Skip("AGENTBOX_NODE_SEMVER is not set")
	}
	ranges, versions := generatedRanges(50000), []string{
		"0.0.0", "0.0.0-0", "0.0.0-alpha", "0.0.1", "0.1.0", "0.2.3", "1.0.0", "1.0.0-alpha",
		"1.0.0-0", "1.2.3", "1.2.3-alpha", "1.2.3-beta.2", "1.2.3-1", "1.2.4", "1.3.0", "1.3.0-0",
		"2.0.0", "2.0.0-rc.0", "2.0.0-rc.1", "2.5.1", "3.0.0", "10.0.0", "0.0.3", "0.0.4-x",
	}
	in, err := json.Marshal(map[string][]string{"ranges": ranges, "versions": versions})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "-e", nodeScript, dir)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var want [][]int
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, s := range ranges {
		r, err := ParseRange(s)
		switch {
		case want[i] == nil && err == nil:
			t.Errorf("ParseRange(%q) succeeded; node-semver rejects it", s)
		case want[i] != nil && err != nil && !strings.Contains(s, "*") && !strings.Contains(err.Error(), "build metadata"):
			t.Errorf("ParseRange(%q): %v; node-semver accepts it", s, err)
		case want[i] != nil && err == nil:
			for j, vs := range versions {
				if got := r.Satisfies(mustVersion(t, vs)); got != (want[i][j] == 1) {
					t.Errorf("%q satisfies %q = %v; node-semver says %v", vs, s, got, !got)
				}
			}
		}
	}
}

// generatedRanges returns n distinct ranges, half assembled from operators
// and partial versions, half from arbitrary fragments.
func generatedRanges(n int) []string {
	rng := rand.New(rand.NewSource(1))
	pick := func(list ...string) string { return list[rng.Intn(len(list))] }
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for k := 1 + rng.Intn(4); k > 0; k-- {
			if len(out)%2 == 0 {
				b.WriteString(pick("=", "<", ">", "<=", ">=", "~", "~>", "^", "v", " ", "0", "1", "2", "01", "x", "*",
					".", ".", "-alpha", "-0", "-1", "+build", " - ", " || ", "-", "\t", "1.2.3", "0.0.0", "1.x", "\u00a0"))
				continue
			}
			b.WriteString(pick("", "", "^", "~", "~>", ">=", "<", ">", "<=", "=", "v", "^ ", ">= "))
			parts := 1 + rng.Intn(3)
			for p := 0; p < parts; p++ {
				if p > 0 {
					b.WriteString(".")
				}
				b.WriteString(pick("0", "1", "2", "3", "x", "*", "10"))
			}
			if parts == 3 {
				b.WriteString(pick("", "", "-0", "-alpha", "-beta.2", "-rc.1", "-1", "+build"))
			}
			if k > 1 {
				b.WriteString(pick(" ", " ", " || ", " - "))
			}
		}
		if s := b.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
