package generator

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// TestInitFileShowsDefaults: the file init writes says every key "shows
// its default", so it must load to the same configuration as a file that
// names only the agent and the IDE (init's flags).
func TestInitFileShowsDefaults(t *testing.T) {
	dir := t.TempDir()
	for _, agent := range catalog.AgentNames() {
		for _, ide := range config.IDEs {
			t.Run(agent+"-"+ide, func(t *testing.T) {
				data, err := InitFile(dir, "my-project", agent, ide)
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := config.Decode(config.ConfigFile, data, dir)
				if err != nil {
					t.Fatal(err)
				}
				want, _, err := config.Decode(config.ConfigFile, []byte("agent: "+agent+"\ndevcontainer: {ide: "+ide+"}\n"), dir)
				if err != nil {
					t.Fatal(err)
				}
				if got.Name != "my-project" {
					t.Errorf("init's file has name %q, want my-project", got.Name)
				}
				want.Name = got.Name // the one key init chooses
				for _, c := range []*config.Config{got, want} {
					c.AgentPos, c.BasePos, c.EgressPos = yamlpos.Pos{}, yamlpos.Pos{}, yamlpos.Pos{}
					c.RunTimeoutPos, c.RunMaxTimeoutPos, c.CopyLoginPos = yamlpos.Pos{}, yamlpos.Pos{}, yamlpos.Pos{}
					v := reflect.ValueOf(c).Elem()
					for i := range v.NumField() {
						if f := v.Field(i); f.Kind() == reflect.Slice && f.Len() == 0 {
							f.SetZero() // [] as written, or left out
						}
					}
				}
				g, w := reflect.ValueOf(*got), reflect.ValueOf(*want)
				for i := range g.NumField() {
					if !reflect.DeepEqual(g.Field(i).Interface(), w.Field(i).Interface()) {
						t.Errorf("%s: init's file has %#v, the default is %#v", g.Type().Field(i).Name, g.Field(i).Interface(), w.Field(i).Interface())
					}
				}
			})
		}
	}
}

func TestInitName(t *testing.T) {
	random := func() string { return "abc123" }
	for dir, want := range map[string]string{
		"/src/acme-api":      "acme-api",
		"/src/Acme API":      "acme-api",
		"/src/日本語":           "agentbox-abc123",
		"/src/Ünïcödé":       "n-c-d",
		"/src/agentbox":      "agentbox",
		"/src/--":            "agentbox-abc123",
		"/src/my.agentbox.x": "my-agentbox-x",
	} {
		if got := InitName(dir, random); got != want {
			t.Errorf("InitName(%q) = %q, want %q", dir, got, want)
		}
	}
}

func TestWriteInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "proj")
	if _, err := WriteInit(dir, "claude", "vscode", false); err == nil || !strings.Contains(err.Error(), "no such directory") {
		t.Errorf("a missing directory: %v", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path, err := WriteInit(dir, "claude", "vscode", false)
	if err != nil || path != ConfigPath(dir) {
		t.Fatalf("WriteInit = %s, %v", path, err)
	}
	if _, err := WriteInit(dir, "claude", "vscode", false); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("over an agentbox.yaml: %v", err)
	}
	if _, err := WriteInit(dir, "codex", "none", true); err != nil {
		t.Errorf("with force: %v", err)
	}
}
