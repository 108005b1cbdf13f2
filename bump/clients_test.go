package bump

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/internal/testing/testca"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// tlsRegistry is an npm registry stand-in over TLS with a certificate of a
// test CA (a proxy that intercepts TLS), which wants a Bearer token.
func tlsRegistry(t *testing.T, token string) (srv *httptest.Server, caFile string) {
	t.Helper()
	ca, err := testca.New()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Server([]net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "token wanted", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"name":"pkg","dist-tags":{"latest":"1.2.3"},"versions":{}}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return srv, caFile
}

// bump's npm client trusts the settings' CA and sends the token npm's
// configuration holds for the registry in use.
func TestBumpNPMTrustsCAAndSendsToken(t *testing.T) {
	srv, caFile := tlsRegistry(t, "s3cret")
	home := t.TempDir()
	host := strings.TrimPrefix(srv.URL, "https://")
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte("//"+host+"/:_authToken=${TOKEN}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withToken := func(k string) string { return map[string]string{"HOME": home, "TOKEN": "s3cret"}[k] }
	noToken := func(k string) string { return map[string]string{"HOME": t.TempDir()}[k] }
	reg := settings.Settings{NPM: settings.NPM{Registry: srv.URL + "/"}}
	withCA := reg
	withCA.CACertificates = []string{caFile}
	ctx := context.Background()

	if _, err := NPMClient(t.TempDir(), reg, withToken).Latest(ctx, "pkg"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without ca_certificates: %v, want a certificate error", err)
	}
	if _, err := NPMClient(t.TempDir(), withCA, noToken).Latest(ctx, "pkg"); err == nil || !strings.Contains(err.Error(), "authentication refused") {
		t.Errorf("without the token: %v, want authentication refused", err)
	}
	v, err := NPMClient(t.TempDir(), withCA, withToken).Latest(ctx, "pkg")
	if err != nil || v != "1.2.3" {
		t.Errorf("with the CA and the token: %q, %v", v, err)
	}
}

// The transport of Debian's archive and of the image resolver trusts the
// settings' CA too.
func TestBumpTransportTrustsCA(t *testing.T) {
	srv, caFile := tlsRegistry(t, "x")
	get := func(s settings.Settings) error {
		resp, err := (&http.Client{Transport: transport(s)}).Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(settings.Settings{}); err == nil {
		t.Error("without ca_certificates: the test CA's server was trusted")
	}
	if err := get(settings.Settings{CACertificates: []string{caFile}}); err != nil {
		t.Errorf("with ca_certificates: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (settings.Settings{CACertificates: []string{bad}}).CAPEM(); err == nil || !strings.Contains(err.Error(), "PEM certificates") {
		t.Errorf("a file with no certificate: %v", err)
	}
}

// bump reads the archive the settings name, in their layout.
func TestNewDebianArchive(t *testing.T) {
	s := settings.Settings{Debian: settings.Debian{Archive: "http://10.0.0.1/debian", Layout: settings.LayoutPlain, Security: "http://10.0.0.1/security"}}
	if a := NewDebianArchive(s); a.Base != s.Debian.Archive || a.Layout != debian.LayoutPlain || a.Security != s.Debian.Security {
		t.Errorf("archive %+v", a)
	}
	if a := NewDebianArchive(settings.Settings{}); a.Base != lockfile.DebianArchive || a.Layout != "" {
		t.Errorf("default archive %+v", a)
	}
}

func TestRegistryMirrorsSettingsThenDaemon(t *testing.T) {
	s := settings.Settings{Registries: settings.Registries{Mirrors: []string{"http://127.0.0.1:5000", "https://m.test"}}}
	got := RegistryMirrors(s, []string{"https://m.test/", "https://d.test/"})
	want := []string{"http://127.0.0.1:5000", "https://m.test", "https://d.test/"}
	if !slices.Equal(got, want) {
		t.Errorf("RegistryMirrors = %q, want %q", got, want)
	}
	if got := RegistryMirrors(settings.Settings{}, nil); got != nil {
		t.Errorf("no mirrors: %q", got)
	}
}
