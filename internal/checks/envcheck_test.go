package checks

import (
	"os"
	"testing"
)

// TestGoldenEnvSurvivesCompose loads a generated compose file as compose does
// and checks that environment values arrive exactly as written in
// agentbox.yaml: "$" not interpolated, quotes and newlines intact.
func TestGoldenEnvSurvivesCompose(t *testing.T) {
	data, err := os.ReadFile("../../testdata/golden/packages-env/want/.agentbox/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadCompose(data, t.TempDir(), "packages-env")
	if err != nil {
		t.Fatal(err)
	}
	env := p.Services["agent"].Environment
	for k, want := range map[string]string{
		"DOLLAR": "costs $5 or ${HOME} or $(id)",
		"QUOTES": "it's \"quoted\"\nand multi-line",
		"NUMBER": "42",
	} {
		if got := env[k]; got == nil || *got != want {
			t.Errorf("%s = %v, want %q", k, got, want)
		}
	}
}
