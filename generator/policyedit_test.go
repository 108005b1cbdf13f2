package generator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
)

// TestEditPolicy: an entry added is written into agentbox.yaml with the
// files; one the list has already changes nothing; removing takes it out.
func TestEditPolicy(t *testing.T) {
	dir := t.TempDir()
	yaml := "name: demo\nagent: none\nnetwork:\n  domains:\n    - api.example.com # the API\n"
	if err := os.WriteFile(filepath.Join(dir, config.ConfigFile), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile("../testdata/golden/agent-none/agentbox.lock")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agentbox.lock"), lock, 0o644); err != nil {
		t.Fatal(err)
	}
	load := func() *config.Config {
		c, err := Compile(dir, CompileOptions{Until: Loaded})
		if err != nil {
			t.Fatal(err)
		}
		return c.Config
	}
	docs, _ := config.ParsePolicyEntry("docs.example.com", nil)
	api, _ := config.ParsePolicyEntry("api.example.com", nil)
	ed, err := EditPolicy(dir, load(), "balanced", []config.PolicyEntry{api, docs}, false)
	if err != nil || len(ed.Changed) != 1 || len(ed.Already) != 1 || ed.Config == nil || len(ed.Files) == 0 {
		t.Fatalf("add: %+v, %v", ed, err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, config.ConfigFile))
	if !strings.Contains(string(data), "- api.example.com # the API\n    - docs.example.com\n") {
		t.Errorf("agentbox.yaml:\n%s", data)
	}
	if ed, err := EditPolicy(dir, load(), "balanced", []config.PolicyEntry{api}, false); err != nil || len(ed.Changed) != 0 || ed.Files != nil {
		t.Errorf("add again: %+v, %v", ed, err)
	}
	if ed, err := EditPolicy(dir, load(), "balanced", []config.PolicyEntry{docs}, true); err != nil || len(ed.Changed) != 1 {
		t.Errorf("remove: %+v, %v", ed, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, config.ConfigFile)); string(data) != yaml {
		t.Errorf("after remove:\n%s", data)
	}
}
