package gitgate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hookNames are the hooks the attacker plants; each writes a marker file
// named after itself when git runs it.
var hookNames = []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout",
	"post-merge", "post-index-change", "reference-transaction", "post-rewrite", "fsmonitor-watchman"}

// plantAttacks turns repo into a hostile repository: hooks in .git/hooks and
// in a core.hooksPath directory, core.fsmonitor, filter and diff drivers
// named by a committed .gitattributes, an external diff program. Everything
// it makes git run writes a file into markers. It commits .gitattributes on
// branch and returns that branch.
func plantAttacks(t *testing.T, repo, markers string) string {
	t.Helper()
	mark := func(name string) string { return "echo " + name + " >> " + filepath.Join(markers, name) }
	hooks := filepath.Join(repo, ".git", "evil-hooks")
	for _, dir := range []string{hooks, filepath.Join(repo, ".git", "hooks")} {
		for _, h := range hookNames {
			writeTestFile(t, filepath.Join(dir, h), "#!/bin/sh\n"+mark(h)+"\nexit 0\n")
			os.Chmod(filepath.Join(dir, h), 0o755)
		}
	}
	for _, kv := range [][2]string{
		{"core.hooksPath", hooks},
		{"core.fsmonitor", mark("fsmonitor") + "; exit 1"},
		{"core.untrackedCache", "true"},
		{"filter.evil.clean", mark("filter-clean") + "; cat"},
		{"filter.evil.smudge", mark("filter-smudge") + "; cat"},
		{"filter.evil.required", "true"},
		{"diff.evil.textconv", "sh -c '" + mark("textconv") + "; cat \"$0\"'"},
		{"diff.external", "sh -c '" + mark("external-diff") + "'"},
	} {
		gitT(t, repo, "config", kv[0], kv[1])
	}
	branch(t, repo, "evil")
	commitFiles(t, repo, map[string]string{
		".gitattributes": "* filter=evil diff=evil\n",
		"notes.txt":      "the agent's work\n",
	}, "attributes")
	return "evil"
}

// hostOps are what a user does with a fetched branch: look at it, check it
// out, change it, commit, go back.
func hostOps(t *testing.T, repo, br string) {
	t.Helper()
	gitT(t, repo, "checkout", "-q", br)
	writeTestFile(t, filepath.Join(repo, "notes.txt"), "edited on the host\n")
	writeTestFile(t, filepath.Join(repo, "new.txt"), "new\n")
	for _, args := range [][]string{
		{"status"},
		{"diff"},
		{"log", "-p", "-2"},
		{"show", "--stat"},
		{"add", "-A"},
		{"diff", "--cached"},
		{"commit", "-qm", "host edit"},
		{"checkout", "-q", "main"},
		{"checkout", "-q", br},
	} {
		gitT(t, repo, args...)
	}
}

func markersIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestFetchRunsNothingFromTheAgent: the hostile repository's hooks, config
// and drivers run when git works inside it (the control), and none of them
// runs when the host fetches its branch and works with it.
func TestFetchRunsNothingFromTheAgent(t *testing.T) {
	isolate(t)
	markers := t.TempDir()
	host := newHost(t)
	agent := newAgent(t, host)
	br := plantAttacks(t, agent, markers)
	os.RemoveAll(markers) // the setup's own commits ran some
	os.Mkdir(markers, 0o755)
	bundle := bundleOf(t, agent)

	t.Run("host", func(t *testing.T) {
		res := fetchT2(t, host, bundle)
		b := byName(t, res, br)
		wantWritten(t, host, b, StatusNew)
		hostOps(t, host, "agentbox/"+br)
		if data, err := os.ReadFile(filepath.Join(host, ".gitattributes")); err != nil || !strings.Contains(string(data), "filter=evil") {
			t.Fatalf("the agent's .gitattributes is not in the host's work tree: %q %v", data, err)
		}
		if m := markersIn(t, markers); len(m) > 0 {
			t.Errorf("git on the host ran the agent's programs: %v", m)
		}
	})
	t.Run("control", func(t *testing.T) {
		// The same operations inside the agent's repository run its
		// programs: the markers work, so their absence above means
		// something.
		hostOps(t, agent, br)
		got := markersIn(t, markers)
		for _, want := range []string{"fsmonitor", "pre-commit", "post-commit", "post-checkout",
			"post-index-change", "reference-transaction", "filter-clean", "filter-smudge", "textconv", "external-diff"} {
			if !slices.Contains(got, want) {
				t.Errorf("control: %s did not run (markers %v)", want, got)
			}
		}
	})
}

// fetchT2 fetches a bundle file into host.
func fetchT2(t *testing.T, host, bundle string) *Result {
	t.Helper()
	res, err := Fetch(t.Context(), FetchOptions{Dir: host, Bundle: bundle})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	checkNoIncoming(t, host)
	return res
}
