package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPublicSuffixWarned: validate warns at an entry of network.domains
// that is a public suffix (and still succeeds); explain names it in every
// format, and diff's row that adds it says so.
func TestPublicSuffixWarned(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), []byte("agent: none\nnetwork:\n  domains: [api.example.com, github.io]\n"))
	lock, err := os.ReadFile(filepath.Join(diffDir, "agentbox.lock"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "agentbox.lock"), lock)
	_, stderr, code := runIn(t, dir, "validate")
	if want := "agentbox: warning: agentbox.yaml:3:30: network.domains[1]: github.io is a public suffix"; code != 0 || !strings.Contains(stderr, want) || strings.Contains(stderr, "api.example.com") {
		t.Errorf("validate: exit %d, stderr %q; want exit 0 and %q alone", code, stderr, want)
	}
	for _, format := range []string{"text", "markdown"} {
		stdout, stderr, code := runIn(t, dir, "explain", "--format", format)
		if code != 0 {
			t.Fatalf("explain: %d %s", code, stderr)
		}
		for _, line := range strings.Split(stdout, "\n") {
			if strings.Contains(line, "example.com") && strings.Contains(line, "public suffix") ||
				strings.Contains(line, "github.io") && strings.Contains(line, "and subdomains") && !strings.Contains(line, "a public suffix") {
				t.Errorf("explain --format %s: %s", format, line)
			}
		}
	}
}
