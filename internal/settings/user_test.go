package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/testca"
)

// LoadUser reads the certificates once: the settings a command passes on
// give what was read when it loaded them.
func TestLoadUserReadsCertificatesOnce(t *testing.T) {
	ca, err := testca.New()
	if err != nil {
		t.Fatal(err)
	}
	pemFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(pemFile, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	s, err := LoadUser(env(map[string]string{EnvCACertificates: pemFile}))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(pemFile); err != nil {
		t.Fatal(err)
	}
	if got, err := s.CAPEM(); err != nil || len(got) == 0 {
		t.Errorf("CAPEM after the file went: %d bytes, %v", len(got), err)
	}
	if _, err := LoadUser(env(map[string]string{EnvCACertificates: pemFile})); err == nil || !strings.Contains(err.Error(), "ca_certificates[0]") {
		t.Errorf("a certificate file that cannot be read: %v", err)
	}
}
