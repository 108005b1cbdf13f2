package settings

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/testca"
)

func TestBuildSecrets(t *testing.T) {
	a, err := testca.New()
	if err != nil {
		t.Fatal(err)
	}
	b, err := testca.New()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a.pem"), filepath.Join(dir, "b.pem")
	if err := os.WriteFile(pa, a.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, append([]byte("\n"), b.PEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	s := Settings{CACertificates: []string{pa, pb}}
	env, err := s.BuildSecrets([]string{"PATH=/bin", EnvBuildNPMRC + "=stale", EnvBuildCA + "=stale"}, "//h/:_authToken=t\n")
	if err != nil {
		t.Fatal(err)
	}
	bundle := string(a.PEM) + string(b.PEM)
	want := []string{"PATH=/bin", EnvBuildCA + "=" + bundle, EnvBuildNPMRC + "=//h/:_authToken=t\n"}
	if !slices.Equal(env, want) {
		t.Errorf("BuildSecrets:\n%q\nwant\n%q", env, want)
	}
	// Nothing to give: the variables are unset, whatever the caller had.
	env, err = Settings{}.BuildSecrets([]string{EnvBuildCA + "=x", EnvBuildNPMRC + "=y"}, "")
	if err != nil || len(env) != 0 {
		t.Errorf("no CA, no npmrc: %q, %v", env, err)
	}
	// A key is not a certificate.
	key := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(key, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Settings{CACertificates: []string{key}}).BuildSecrets(nil, ""); err == nil || !strings.Contains(err.Error(), "not a certificate") {
		t.Errorf("a private key: %v", err)
	}
}
