package npm

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAuthFromConfig(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".npmrc"), `_authToken=unscoped-never-sent
//npm.internal/:_authToken=${NPM_TOKEN}
//npm.internal/team/:_auth="dXNlcjpwYXNz"
//other.internal:8080/:username=alice
//other.internal:8080/:_password=c2VjcmV0 ; a comment
//evil.internal/:_authToken=${MULTI}
`)
	env := map[string]string{"HOME": home, "NPM_TOKEN": "tok-1", "MULTI": "a\nregistry=http://x/"}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		registry, header, npmrc string
	}{
		{"https://npm.internal/", "Bearer tok-1", "registry=https://npm.internal/\n//npm.internal/:_authToken=tok-1\n"},
		{"https://npm.internal/npm/repo", "Bearer tok-1", "registry=https://npm.internal/npm/repo/\n//npm.internal/:_authToken=tok-1\n"},
		{"https://npm.internal/team/x/", "Basic dXNlcjpwYXNz", "registry=https://npm.internal/team/x/\n//npm.internal/team/:_auth=dXNlcjpwYXNz\n"},
		{"http://other.internal:8080", "Basic YWxpY2U6c2VjcmV0", "registry=http://other.internal:8080/\n//other.internal:8080/:username=alice\n//other.internal:8080/:_password=c2VjcmV0\n"},
		{"https://other.internal/", "", ""},   // another port is another registry
		{"https://unknown.internal/", "", ""}, // the unscoped token is not sent
		{"https://evil.internal/", "", ""},    // a value with a newline is dropped
		{"", "", ""},
	} {
		got := AuthFromConfig(c.registry, proj, getenv)
		if got.Header != c.header || got.NPMRC != c.npmrc {
			t.Errorf("AuthFromConfig(%q) = %+v, want header %q npmrc %q", c.registry, got, c.header, c.npmrc)
		}
	}
	// The project's .npmrc wins over the user's.
	write(filepath.Join(proj, ".npmrc"), "//npm.internal/:_authToken=project\n")
	if got := AuthFromConfig("https://npm.internal/", proj, getenv); got.Header != "Bearer project" {
		t.Errorf("with a project .npmrc: %+v", got)
	}
	// NPM_CONFIG_USERCONFIG replaces $HOME/.npmrc.
	other := filepath.Join(t.TempDir(), "npmrc")
	write(other, "//npm.internal/:_authToken=userconfig\n")
	env["NPM_CONFIG_USERCONFIG"] = other
	if got := AuthFromConfig("https://npm.internal/", t.TempDir(), getenv); got.Header != "Bearer userconfig" {
		t.Errorf("with NPM_CONFIG_USERCONFIG: %+v", got)
	}
}
