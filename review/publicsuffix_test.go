package review

import (
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
)

func TestIsPublicSuffix(t *testing.T) {
	for name, want := range map[string]bool{
		"github.io": true, "co.uk": true, "s3.amazonaws.com": true, "io": true, "githubusercontent.com": true,
		"example.github.io": false, "example.co.uk": false, "example.com": false, "amazonaws.com": false,
		"internal": false, "localhost": false, "acme.test": false, "test": false,
	} {
		if got := IsPublicSuffix(name); got != want {
			t.Errorf("IsPublicSuffix(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestPublicSuffixNamed: explain marks a destination that is a public
// suffix, diff warns on the row that adds it, and validate warns at the
// entry of agentbox.yaml that names it (a custom profile's own too).
func TestPublicSuffixNamed(t *testing.T) {
	yml := "agent: none\nnetwork:\n  domains: [api.example.com, \"*.github.io\"]\nprofiles:\n  ci:\n    from: balanced\n    network:\n      domains: [co.uk]\n"
	head, err := explainSource(yml, testLock)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range head.Network.Domains {
		if d.PublicSuffix != (d.Name == "github.io") {
			t.Errorf("%s: public_suffix %v", d.Name, d.PublicSuffix)
		}
	}
	base, err := explainSource("agent: none\n", testLock)
	if err != nil {
		t.Fatal(err)
	}
	warned := map[string]bool{}
	for _, r := range DiffSandboxes(base, head) {
		if r.Warning != "" {
			warned[r.What+" "+r.Subject] = true
			if r.Kind != Widens || !strings.Contains(r.Warning, "public suffix") {
				t.Errorf("%+v", r)
			}
		}
	}
	if !warned["destination github.io:443"] || !warned["profile destination ci co.uk:443"] || len(warned) != 2 {
		t.Errorf("warned rows %v, want github.io:443 and the profile's co.uk:443", warned)
	}
	c, err := generator.Compile(".", generator.CompileOptions{Until: generator.Loaded, Source: &generator.Source{File: config.ConfigFile, Config: []byte(yml), Lock: []byte(testLock)}})
	if err != nil {
		t.Fatal(err)
	}
	got := PublicSuffixWarnings(c)
	want := []string{"agentbox.yaml:3:30: network.domains[1]: github.io is a public suffix", "agentbox.yaml:8:17: profiles.ci.network.domains[0]: co.uk is a public suffix"}
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %q, want prefix %q", got[i], want[i])
		}
	}
}
