package npm

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRegistryFromConfig(t *testing.T) {
	root := t.TempDir()
	project := filepath.Join(root, "project")
	home := filepath.Join(root, "home")
	bare := filepath.Join(root, "bare")
	writeFile(t, filepath.Join(project, ".npmrc"), `
# a comment
; another comment
@myorg:registry=https://scoped.example/
  registry =  https://project.example/npm/   ; trailing comment
always-auth=true
`)
	writeFile(t, filepath.Join(home, ".npmrc"), "registry=\"https://home.example/\"\n")
	writeFile(t, filepath.Join(root, "custom.npmrc"), "registry=${MIRROR}/npm/\n")
	writeFile(t, filepath.Join(bare, ".npmrc"), "# registry=https://commented.example/\n[section]\nregistry=https://in-section.example/\n")
	if err := os.MkdirAll(filepath.Join(root, "none"), 0o755); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		dir  string
		env  map[string]string
		want string
	}{
		{"env beats everything", project, map[string]string{"NPM_CONFIG_REGISTRY": "https://env.example/", "HOME": home}, "https://env.example/"},
		{"lowercase env", project, map[string]string{"npm_config_registry": "https://lower.example/", "HOME": home}, "https://lower.example/"},
		{"project .npmrc beats home", project, map[string]string{"HOME": home}, "https://project.example/npm/"},
		{"home .npmrc", filepath.Join(root, "none"), map[string]string{"HOME": home}, "https://home.example/"},
		{"userconfig replaces home", filepath.Join(root, "none"), map[string]string{"HOME": home, "NPM_CONFIG_USERCONFIG": filepath.Join(root, "custom.npmrc"), "MIRROR": "http://127.0.0.1:4873"}, "http://127.0.0.1:4873/npm/"},
		{"comments and sections ignored", bare, map[string]string{"HOME": home}, "https://home.example/"},
		{"default: npm's own", filepath.Join(root, "none"), map[string]string{}, ""},
		{"no HOME", bare, map[string]string{}, ""},
	}
	for _, c := range cases {
		getenv := func(k string) string { return c.env[k] }
		if got := RegistryFromConfig(c.dir, getenv); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
