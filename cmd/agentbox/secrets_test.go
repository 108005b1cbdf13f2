package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/sandbox"
)

// writeSecrets writes the user's secrets file under a fresh
// XDG_CONFIG_HOME with mode perm.
func writeSecrets(t *testing.T, content string, perm os.FileMode) string {
	t.Helper()
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	p := filepath.Join(cfg, "agentbox", sandbox.SecretsFileName)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUpPassesSecrets: agentbox up gives docker compose the names of
// secrets from the secrets file, the environment winning, and refuses a
// file open to others; a name set nowhere is reported; the value of a key
// the gateway holds must be one (it is refused before anything starts).
func TestUpPassesSecrets(t *testing.T) {
	dir := project(t, "secrets")
	const name = "CLAUDE_CODE_OAUTH_TOKEN"
	for _, tt := range []struct {
		test    string
		file    string
		perm    os.FileMode
		env     string // "" for unset
		want    string // the value compose up saw, "unset", or "" when up must fail
		wantErr string // in stderr
	}{
		{"from the file", name + "=from-file\n# comment\n\nOTHER=x\n", 0o600, "", "from-file", ""},
		{"the environment wins", name + "=from-file\n", 0o600, "from-env", "from-env", ""},
		{"value as written", name + "=a=b==\n", 0o400, "", "a=b==", ""},
		// The gateway holds it: a value that is no key is refused before
		// anything starts.
		{"not a key", name + "= spaced =value \n", 0o600, "", "", "the value of " + name + " is not one word"},
		{"set nowhere", "OTHER=x\n", 0o600, "", "unset", "the agent goes without: ANTHROPIC_API_KEY, " + name},
		{"open to the group", name + "=x\n", 0o640, "", "", "mode 0640); run: chmod 600"},
		{"open to others", name + "=x\n", 0o604, "", "", "chmod 600"},
		{"steering name", "DOCKER_HOST=tcp://elsewhere\n", 0o600, "", "", "secrets.env:1: DOCKER_HOST: names starting with"},
		{"no equals sign", "just a line\n", 0o600, "", "", "secrets.env:1: want NAME=VALUE"},
		{"bad name", "1X=y\n", 0o600, "", "", "secrets.env:1: invalid environment variable name"},
		{"twice", name + "=a\n" + name + "=b\n", 0o600, "", "", "secrets.env:2: " + name + " is set twice"},
	} {
		t.Run(tt.test, func(t *testing.T) {
			log := fakeDocker(t, "ok")
			script, _ := os.ReadFile(filepath.Join(filepath.Dir(log), "docker"))
			spy := strings.Replace(string(script), "\n", "\n[ \"$4 $5 $6\" = \"-p secrets up\" ] && echo \"secret=${"+name+"-unset}\" >> '"+log+"'\n", 1)
			if err := os.WriteFile(filepath.Join(filepath.Dir(log), "docker"), []byte(spy), 0o755); err != nil {
				t.Fatal(err)
			}
			writeSecrets(t, tt.file, tt.perm)
			if tt.env != "" {
				t.Setenv(name, tt.env)
			} else {
				os.Unsetenv(name)
			}
			os.Unsetenv("ANTHROPIC_API_KEY")
			_, stderr, code := runIn(t, dir, "up")
			data, _ := os.ReadFile(log)
			if tt.want == "" {
				if code == exitOK || strings.Contains(string(data), " up ") {
					t.Fatalf("up ran compose up (exit %d): %s", code, data)
				}
			} else if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			} else if !strings.Contains(string(data), "secret="+tt.want+"\n") {
				t.Errorf("compose up saw %s=?, want %q:\n%s", name, tt.want, data)
			}
			if tt.wantErr != "" && !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr %q, want %q in it", stderr, tt.wantErr)
			}
			if tt.wantErr == "" && strings.Contains(stderr, name) {
				t.Errorf("stderr warns of %s: %q", name, stderr)
			}
		})
	}
}

// TestSecretsFileMustBeARegularFileOfYourOwn: a link is refused, even to a
// file of mode 0600; a missing file holds nothing.
func TestSecretsFileMustBeARegularFileOfYourOwn(t *testing.T) {
	target := filepath.Join(t.TempDir(), "real")
	if err := os.WriteFile(target, []byte("A=b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "secrets.env")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.ReadSecrets(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link: err = %v", err)
	}
	if m, err := sandbox.ReadSecrets(filepath.Join(t.TempDir(), "none")); err != nil || len(m) != 0 {
		t.Errorf("a missing file: %v %v", m, err)
	}
	if _, err := sandbox.ReadSecrets(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: err = %v", err)
	}
}

// TestDownIgnoresSecretsFile: a secrets file agentbox refuses keeps up from
// starting, never down from stopping.
func TestDownIgnoresSecretsFile(t *testing.T) {
	dir := project(t, "secrets")
	writeSecrets(t, "CLAUDE_CODE_OAUTH_TOKEN=x\n", 0o644)
	for _, args := range [][]string{{"down"}, {"logs", "egress"}} {
		fakeDocker(t, "ok")
		if _, stderr, code := runIn(t, dir, args...); code != exitOK {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}
