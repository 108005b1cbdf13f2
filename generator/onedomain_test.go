package generator

import (
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// TestOneDomainChangeShowsItsLines: adding one name to a policy changes
// only lines that mention it (issue 24, §6): the egress program is the
// same for every policy, and each profile's data holds a name on lines of
// its own. Checked for a name of each shape against the defaults and a
// policy that already lists names. (A name on a port no other name has
// adds that port's sets, rules and gateway listener too.)
func TestOneDomainChangeShowsItsLines(t *testing.T) {
	renderString := func(src string) map[string][]byte {
		t.Helper()
		cfg, err := loadString(t, src)
		if err != nil {
			t.Fatal(err)
		}
		errs := &yamlpos.Errors{File: config.ConfigFile}
		p := plan(cfg, fakeLock(cfg), errs)
		if err := errs.Err(); err != nil {
			t.Fatal(err)
		}
		files, err := render(p)
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	for _, base := range []string{
		"agent: claude\n",
		"agent: codex\nnetwork:\n  domains: [a.example.org, zz.example.net]\n",
	} {
		for _, entry := range []string{"docs.example.com", "m.example.org", `"*.wild.example.com"`, "{host: p.example.com, ports: [443]}"} {
			with := base + "network:\n  domains: [" + entry + "]\n"
			if strings.Contains(base, "domains:") {
				with = strings.Replace(base, "domains: [", "domains: ["+entry+", ", 1)
			}
			name := strings.Trim(strings.TrimSuffix(strings.TrimPrefix(entry, "{host: "), ", ports: [443]}"), `"*.`)
			before, after := renderString(base), renderString(with)
			for path, data := range after {
				for _, line := range changedLines(string(before[path]), string(data)) {
					if strings.TrimSpace(line) != "" && !strings.Contains(line, name) {
						t.Errorf("adding %s to %q: %s changes a line without the name: %q", entry, base, path, line)
					}
				}
			}
			for path := range before {
				if _, ok := after[path]; !ok {
					t.Errorf("adding %s to %q removes %s", entry, base, path)
				}
			}
		}
	}
}

// changedLines returns the lines of a and b that the other lacks (as
// multisets: a line that moved does not count). A blank line between
// blocks counts too; the caller skips those.
func changedLines(a, b string) []string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	var out []string
	for _, l := range strings.Split(b, "\n") {
		if count[l] > 0 {
			count[l]--
			continue
		}
		out = append(out, l)
	}
	for l, n := range count {
		for ; n > 0; n-- {
			out = append(out, l)
		}
	}
	return out
}
