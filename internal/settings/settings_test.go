package settings

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadFileAndOverrides(t *testing.T) {
	p := write(t, `debian:
  archive: http://10.0.0.1:3142/snap
npm:
  registry: http://10.0.0.1:4873/
registries:
  mirrors: [http://10.0.0.1:5000]
ca_certificates: [/etc/ssl/company.pem]
`)
	s, err := Load(p, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if s.Debian.Archive != "http://10.0.0.1:3142/snap" || s.NPM.Registry != "http://10.0.0.1:4873/" ||
		!slices.Equal(s.Registries.Mirrors, []string{"http://10.0.0.1:5000"}) || !slices.Equal(s.CACertificates, []string{"/etc/ssl/company.pem"}) {
		t.Fatalf("settings: %+v", s)
	}
	if got := s.Sources["npm.registry"]; got != p+":4:13" {
		t.Errorf("source of npm.registry: %q", got)
	}
	s, err = Load(p, env(map[string]string{EnvNPMRegistry: "https://npm.internal/", EnvRegistryMirror: "http://a:1, http://b:2"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.NPM.Registry != "https://npm.internal/" || s.Sources["npm.registry"] != "$"+EnvNPMRegistry ||
		!slices.Equal(s.Registries.Mirrors, []string{"http://a:1", "http://b:2"}) {
		t.Fatalf("overrides: %+v", s)
	}
	// An empty variable is unset: the file's value replaces it.
	got := s.BuildEnv([]string{"PATH=/bin", EnvDebianArchive + "=", EnvNPMRegistry + "=https://npm.internal/"})
	want := []string{"PATH=/bin", EnvDebianArchive + "=http://10.0.0.1:3142/snap", EnvNPMRegistry + "=https://npm.internal/"}
	if !slices.Equal(got, want) {
		t.Errorf("BuildEnv: %q, want %q", got, want)
	}
}

func TestBuildEnvPlain(t *testing.T) {
	p := write(t, "debian:\n  layout: plain\n  archive: http://10.0.0.1/debian\n  security: http://10.0.0.1/debian-security\n")
	s, err := Load(p, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := s.BuildEnv([]string{EnvDebianLayout + "=snapshot"})
	want := []string{EnvDebianArchive + "=http://10.0.0.1/debian", EnvDebianLayout + "=plain", EnvDebianSecurity + "=http://10.0.0.1/debian-security"}
	if !slices.Equal(got, want) {
		t.Errorf("BuildEnv: %q, want %q", got, want)
	}
}

// A registry mirror on loopback is the Docker daemon's (or bump's) to
// reach, not a build container's: it is not refused.
func TestLoopbackRegistryMirror(t *testing.T) {
	if _, err := Load(write(t, "registries:\n  mirrors: [http://127.0.0.1:5000]\n"), env(nil)); err != nil {
		t.Fatal(err)
	}
}

func TestLoadNoFile(t *testing.T) {
	s, err := Load(filepath.Join(t.TempDir(), "none.yaml"), env(nil))
	if err != nil || s.File != "" || s.Debian.Archive != "" {
		t.Fatalf("%+v %v", s, err)
	}
	if s, err = Load("", env(nil)); err != nil || s.File != "" {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestLoadRefusesPositioned(t *testing.T) {
	for _, c := range []struct{ body, env, want string }{
		{"debian:\n  archiv: http://x/\n", "", ":2:3"},
		{"debian:\n  archive: ftp://x/\n", "", `:2:12: debian.archive: "ftp://x/" is not an http:// or https:// URL`},
		{"debian:\n  archive: \"http://x/$(id)\"\n", "", "which no URL"},
		{"debian:\n  layout: flat\n  archive: http://x/\n", "", `:2:11: debian.layout: "flat" is not a layout`},
		{"debian:\n  layout: plain\n", "", "plain needs debian.archive"},
		{"debian:\n  layout: plain\n  archive: http://x/\n", "", ":2:11: debian.layout: plain needs debian.security"},
		{"debian:\n  archive: http://127.0.0.1:3142/\n", "", `:2:12: debian.archive: "http://127.0.0.1:3142/" is on loopback`},
		{"debian:\n  layout: plain\n  archive: http://x/\n  security: http://[::1]:1/\n", "", `debian.security: "http://[::1]:1/" is on loopback`},
		{"npm:\n  registry: http://localhost:4873/\n", "", `npm.registry: "http://localhost:4873/" is on loopback`},
		{"npm:\n  registry: http://mirror.localhost/\n", "", "is on loopback"},
		{"npm:\n  registry: http://0.0.0.0:4873/\n", "", "is on loopback"},
		{"npm: {}\n", "http://127.1.2.3/", "$NPM_CONFIG_REGISTRY: npm.registry: \"http://127.1.2.3/\" is on loopback, which a build container cannot reach"},
		{"debian:\n  security: http://s/\n  archive: http://x/\n", "", "is for a plain mirror"},
		{"registries:\n  mirrors: [http://m:5000/v2]\n", "", `:2:13: registries.mirrors[0]: "http://m:5000/v2": a registry mirror is scheme://host[:port]`},
		{"ca_certificates: [company.pem]\n", "", `ca_certificates[0]: "company.pem" is not an absolute path`},
		{"npm: {}\n", "http://x/?token=1", "$NPM_CONFIG_REGISTRY: npm.registry: "},
	} {
		p := write(t, c.body)
		_, err := Load(p, env(map[string]string{EnvNPMRegistry: c.env}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to hold %q", c.body, err, c.want)
		}
	}
}
