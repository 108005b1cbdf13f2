package generator

import (
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
)

// TestAgentFilesCodexProvider: Codex's provider appears only with
// OPENAI_BASE_URL, its value quoted as a TOML string (DEL too, which TOML
// refuses raw).
func TestAgentFilesCodexProvider(t *testing.T) {
	codex, _ := catalog.LookupAgent("codex")
	files, err := AgentFiles(codex, nil, config.DefaultWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	plain := string(files[catalog.CodexSystemConfig])
	if !strings.Contains(plain, "check_for_update_on_startup = false") || strings.Contains(plain, "model_provider") {
		t.Errorf("without OPENAI_BASE_URL:\n%s", plain)
	}
	files, err = AgentFiles(codex, []catalog.EnvVar{{Name: "OPENAI_BASE_URL", Value: "http://m.test/v1\"\x7f\n"}}, config.DefaultWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	got := string(files[catalog.CodexSystemConfig])
	for _, want := range []string{"model_provider = \"agentbox\"\n", `base_url = "http://m.test/v1\"\u007F\n"` + "\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
}

// TestAgentFilesRefusesRelativePath: a catalog file's path is absolute and clean.
func TestAgentFilesRefusesRelativePath(t *testing.T) {
	for _, p := range []string{"etc/x", "/etc/../x", "/etc/x/"} {
		if _, err := AgentFiles(catalog.Agent{Name: "x", Files: []catalog.File{{Path: p, Body: "x"}}}, nil, config.DefaultWorkspace); err == nil {
			t.Errorf("path %q: no error", p)
		}
	}
}
